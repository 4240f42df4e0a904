//! Receipt signing keys (guide: "Receipts"): the active key signs, retired keys stay
//! published for verification. Private keys are PKCS#8 PEM files, mode 0600, in
//! `<data-dir>/keys/<kid>.pem`; public halves are in the database.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use ed25519_dalek::SigningKey;
use ed25519_dalek::pkcs8::{DecodePrivateKey, EncodePrivateKey, spki::der::pem::LineEnding};
use rusqlite::Connection;

use crate::domain::credentials::random_bytes;
use crate::domain::receipt;
use crate::error::Result;
use crate::store::receipts;

pub struct Keyring {
    dir: PathBuf,
    cache: Mutex<HashMap<String, SigningKey>>,
}

impl Keyring {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            cache: Mutex::default(),
        }
    }

    /// The active key, read from the database each time so a rotation by the
    /// CLI takes effect without a restart.
    pub fn active(&self, c: &Connection) -> Result<(String, SigningKey)> {
        let kid = receipts::active_kid(c)?
            .ok_or_else(|| anyhow::anyhow!("no active receipt signing key"))?;
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = cache.get(&kid) {
            return Ok((kid, k.clone()));
        }
        let key = load(&self.dir, &kid).map_err(crate::error::Error::signing_key_unreadable)?;
        cache.insert(kid.clone(), key.clone());
        Ok((kid, key))
    }

    /// Makes sure a usable active key exists: creates the first one, or a new one
    /// when the active key's private half is missing (e.g. after a restore
    /// without the keys directory). Returns the active kid.
    pub fn ensure_active(&self, c: &Connection, now: &str) -> anyhow::Result<String> {
        publish_key_files(&self.dir, c, now)?;
        // A key revoked after the backup this database came from is revoked
        // again; were it the active one, a new key is made below.
        apply_revocations(&self.dir, c, now)?;
        if let Some(kid) = receipts::active_kid(c)? {
            if key_path(&self.dir, &kid).exists() {
                // A key file this process cannot read (another owner, a
                // damaged file) would fail every decision: refuse to start
                // instead, saying which file and why.
                let key = load(&self.dir, &kid).map_err(|e| {
                    anyhow::anyhow!(
                        "the active receipt signing key cannot be used: {e:#}; make the file readable by the user hds runs as (it must be the Ed25519 key hds wrote), or restore it from a backup of the keys directory"
                    )
                })?;
                let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
                cache.insert(kid.clone(), key);
                return Ok(kid);
            }
            tracing::warn!(key.kid = %kid, "private half of the active receipt key is missing; rotating to a new key");
        }
        rotate(&self.dir, c, now)
    }

    /// Whether the active key can sign now (`/ready`): read from the
    /// database and, the first time, from its file.
    pub fn can_sign(&self, c: &Connection) -> bool {
        self.active(c).is_ok()
    }
}

/// Publishes, as retired, every key file of the keys directory whose public
/// half the database does not list. A database restored from a backup
/// taken before a rotation lacks the newer key, and the receipts that key
/// signed would no longer verify against the published keys (a public key
/// is never withdrawn). A file that is not the key its name says is left
/// alone, with a warning.
/// Returns how many it published.
pub fn publish_key_files(dir: &Path, c: &Connection, now: &str) -> anyhow::Result<usize> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(0);
    };
    let mut published = 0;
    let known: HashSet<String> = receipts::keys(c)?.into_iter().map(|k| k.kid).collect();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(kid) = name.to_str().and_then(|n| n.strip_suffix(".pem")) else {
            continue;
        };
        if known.contains(kid) {
            continue;
        }
        let x = match load(dir, kid) {
            Ok(key) => receipt::public_x(&key.verifying_key()),
            Err(e) => {
                tracing::warn!(
                    error = format!("{e:#}"),
                    "a file in the keys directory is not a receipt key; left alone"
                );
                continue;
            }
        };
        if receipt::thumbprint(&x) != kid {
            tracing::warn!(file = %name.to_string_lossy(), "a key file is not named after its key's thumbprint; left alone");
            continue;
        }
        // Made when its file was written (a key file is never rewritten):
        // receipts it signed then must not predate its `created_at`.
        // (Through a symlink, as a mounted secret may be, to the file.)
        let made = std::fs::metadata(entry.path())
            .and_then(|m| m.modified())
            .ok()
            .map(|t| crate::domain::time::format(::time::OffsetDateTime::from(t)))
            .filter(|t| t.as_str() < now)
            .unwrap_or_else(|| now.to_owned());
        receipts::insert_retired(c, kid, &x, &made, now)?;
        published += 1;
        tracing::warn!(key.kid = %kid, "a receipt key the database did not list (restored from an older backup?) is published again, as retired");
    }
    Ok(published)
}

pub(crate) fn key_path(dir: &Path, kid: &str) -> PathBuf {
    dir.join(format!("{kid}.pem"))
}

/// The file that keeps a revocation outside the database (`<kid>.revoked`,
/// holding the public half), so that a restore of an older database cannot
/// bring the key back.
fn revoked_path(dir: &Path, kid: &str) -> PathBuf {
    dir.join(format!("{kid}.revoked"))
}

/// `hds keys revoke`: revokes a retired key, recorded in the keys directory
/// first (synced), then in the database. The active key is refused (the
/// caller says to rotate first). The status the key had; None for an
/// unknown kid.
pub fn revoke(dir: &Path, c: &Connection, kid: &str, now: &str) -> anyhow::Result<Option<String>> {
    let status = receipts::status(c, kid)?;
    if status.as_deref() != Some("retired") {
        return Ok(status);
    }
    let x = receipts::keys(c)?
        .into_iter()
        .find(|k| k.kid == kid)
        .map(|k| k.x)
        .ok_or_else(|| anyhow::anyhow!("key {kid} vanished"))?;
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let marker = revoked_path(dir, kid);
    if !marker.exists() {
        write_private(&marker, format!("{x}\n").as_bytes())?;
    }
    receipts::mark_revoked(c, kid, &x, now)?;
    Ok(status)
}

/// Marks revoked, in the database, every key the keys directory records as
/// revoked (`<kid>.revoked`), whatever the database says of it: a database
/// restored from before the revocation lists it as retired or active. A
/// marker that is not the key its name says is left alone, with a warning.
/// Returns the kids it revoked again.
pub fn apply_revocations(dir: &Path, c: &Connection, now: &str) -> anyhow::Result<Vec<String>> {
    let mut again = Vec::new();
    for (kid, x) in revocation_markers(dir) {
        if receipts::mark_revoked(c, &kid, &x, now)? {
            tracing::warn!(key.kid = %kid, "a receipt key revoked after this database's backup is revoked again");
            again.push(kid);
        }
    }
    Ok(again)
}

/// The keys the keys directory records as revoked: (kid, public half) of
/// each `<kid>.revoked` that is the key its name says. A marker that is not
/// is left alone, with a warning.
fn revocation_markers(dir: &Path) -> Vec<(String, String)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(kid) = name.to_str().and_then(|n| n.strip_suffix(".revoked")) else {
            continue;
        };
        let x = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let x = x.trim();
        if receipt::thumbprint(x) != kid {
            tracing::warn!(file = %name.to_string_lossy(), "a revocation marker is not named after its key's thumbprint; left alone");
            continue;
        }
        out.push((kid.to_owned(), x.to_owned()));
    }
    out
}

/// The database's keys as the keys directory has them: one its marker
/// records as revoked is revoked, whatever a database restored from before
/// the revocation says, for the commands that read keys without a server
/// (`hds verify-receipt --data-dir`, `hds keys list`).
pub fn as_marked(dir: &Path, mut keys: Vec<receipt::PublicKey>) -> Vec<receipt::PublicKey> {
    for (kid, x) in revocation_markers(dir) {
        if let Some(k) = keys.iter_mut().find(|k| k.kid == kid && k.x == x) {
            k.status = "revoked".into();
        }
    }
    keys
}

fn load(dir: &Path, kid: &str) -> anyhow::Result<SigningKey> {
    let path = key_path(dir, kid);
    let pem =
        std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
    SigningKey::from_pkcs8_pem(&pem)
        .map_err(|e| anyhow::anyhow!("{}: not a PKCS#8 Ed25519 key: {e}", path.display()))
}

/// Creates a new active key; the old one becomes retired. The private file is
/// written (and synced) before the database points at it. Run inside a
/// transaction.
pub fn rotate(dir: &Path, c: &Connection, now: &str) -> anyhow::Result<String> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    crate::files::restrict_dir(dir)?;
    let key = SigningKey::from_bytes(&random_bytes());
    let x = receipt::public_x(&key.verifying_key());
    let kid = receipt::thumbprint(&x);
    let pem = private_pem(&key)?;
    write_private(&key_path(dir, &kid), pem.as_bytes())?;
    // The caller's transaction makes the two statements atomic.
    receipts::activate(c, &kid, &x, now).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(kid)
}

/// The private key as PKCS#8 v1 PEM (RFC 8410), without the public key
/// that a v2 document (RFC 5958) adds: OpenSSL 3 and Python's
/// `cryptography` read v1, not dalek's v2 form. Keys written before in the
/// v2 form are still read.
fn private_pem(key: &SigningKey) -> anyhow::Result<impl std::ops::Deref<Target = String>> {
    let bytes = ed25519_dalek::pkcs8::KeypairBytes {
        secret_key: key.to_bytes(),
        public_key: None,
    };
    bytes
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| anyhow::anyhow!("encoding key: {e}"))
}

fn write_private(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write;
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        opts.mode(0o600);
    }
    let mut f = opts
        .open(path)
        .with_context(|| format!("creating {}", path.display()))?;
    f.write_all(bytes)?;
    f.sync_all()?;
    drop(f);
    if let Err(e) = owned_as_its_directory(path) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(())
}

/// Gives a new key file the owner of its directory. `hds keys rotate` run
/// as root beside a server that runs as a service user would otherwise
/// leave a file (mode 0600) that server cannot read, and every decision
/// would fail. A user that cannot change the owner is told to run the
/// command as the directory's owner, and no key is made.
#[cfg(unix)]
fn owned_as_its_directory(path: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let want = std::fs::metadata(dir).with_context(|| format!("reading {}", dir.display()))?;
    let got = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if want.uid() == got.uid() {
        return Ok(());
    }
    std::os::unix::fs::chown(path, Some(want.uid()), Some(want.gid())).map_err(|e| {
        anyhow::anyhow!(
            "{} belongs to user {} (group {}), who could not read a key made by this user: {e}; run the command as that user",
            dir.display(),
            want.uid(),
            want.gid()
        )
    })
}

#[cfg(not(unix))]
fn owned_as_its_directory(_: &Path) -> anyhow::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database restored from before a rotation publishes the newer key
    /// again (retired), from its file; the restored active key still signs.
    #[test]
    fn key_files_the_database_lacks_are_published_as_retired() {
        let dir = tempfile::tempdir().unwrap();
        let keys = dir.path().join("keys");
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let ring = Keyring::new(keys.clone());
        let t0 = "2026-11-26T10:00:00.000Z";
        let first = ring.ensure_active(&c, t0).unwrap();
        // What a backup taken now holds.
        let backup: Vec<(String, String, String)> = receipts::keys(&c)
            .unwrap()
            .into_iter()
            .map(|k| (k.kid, k.x, k.status))
            .collect();
        let second = rotate(&keys, &c, "2026-11-26T11:00:00.000Z").unwrap();
        // Restored: the table as it was, the keys directory as it is.
        c.execute("DELETE FROM signing_keys", []).unwrap();
        for (kid, x, status) in &backup {
            c.execute(
                "INSERT INTO signing_keys(kid, x, status, created_at) VALUES (?1, ?2, ?3, ?4)",
                rusqlite::params![kid, x, status, t0],
            )
            .unwrap();
        }
        std::fs::write(keys.join("notes.txt"), "not a key").unwrap();
        std::fs::write(keys.join("bogus.pem"), "not a key either").unwrap();
        // The newer key's file was written when it was made, at 11:00.
        let made = crate::domain::time::parse("2026-11-26T11:00:00.000Z").unwrap();
        std::fs::File::options()
            .write(true)
            .open(key_path(&keys, &second))
            .unwrap()
            .set_modified(made.into())
            .unwrap();
        let t2 = "2026-11-26T12:00:00.000Z";
        assert_eq!(ring.ensure_active(&c, t2).unwrap(), first);
        let listed: Vec<(String, String)> = receipts::keys(&c)
            .unwrap()
            .into_iter()
            .map(|k| (k.kid, k.status))
            .collect();
        assert_eq!(listed.len(), 2, "{listed:?}");
        assert!(listed.contains(&(first.clone(), "active".to_owned())));
        assert!(listed.contains(&(second.clone(), "retired".to_owned())));
        // Published with when it was made (its receipts do not predate it),
        // retired at the restore.
        let again = receipts::keys(&c)
            .unwrap()
            .into_iter()
            .find(|k| k.kid == second)
            .unwrap();
        assert_eq!(again.created_at, "2026-11-26T11:00:00.000Z");
        assert_eq!(again.retired_at.as_deref(), Some(t2));
        // Once listed, a later start adds nothing.
        ring.ensure_active(&c, t2).unwrap();
        assert_eq!(receipts::keys(&c).unwrap().len(), 2);
    }

    /// Key files are PKCS#8 v1 (RFC 8410, no public key), which OpenSSL 3
    /// and Python's `cryptography` read: 48 bytes of DER, version 0; and
    /// they load back as the same key.
    #[test]
    fn key_files_are_pkcs8_v1() {
        use base64::Engine;
        let dir = tempfile::tempdir().unwrap();
        let mut c = Connection::open_in_memory().unwrap();
        crate::store::migrate::apply(&mut c).unwrap();
        let kid = rotate(dir.path(), &c, "2026-11-26T10:00:00.000Z").unwrap();
        let pem = std::fs::read_to_string(key_path(dir.path(), &kid)).unwrap();
        let b64: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
        let der = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        assert_eq!(der.len(), 48, "{pem}");
        assert_eq!(&der[..5], &[0x30, 0x2e, 0x02, 0x01, 0x00]);
        let key = load(dir.path(), &kid).unwrap();
        assert_eq!(
            receipt::thumbprint(&receipt::public_x(&key.verifying_key())),
            kid
        );
    }
}
