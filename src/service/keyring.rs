//! Receipt signing keys (guide: "Receipts"): the active key signs, retired keys stay
//! published for verification. Private keys are PKCS#8 PEM files, mode 0600, in
//! `<data-dir>/keys/<kid>.pem`; public halves are in the database.

use std::collections::HashMap;
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
        let key = load(&self.dir, &kid)?;
        cache.insert(kid.clone(), key.clone());
        Ok((kid, key))
    }

    /// Makes sure a usable active key exists: creates the first one, or a new one
    /// when the active key's private half is missing (e.g. after a restore
    /// without the keys directory). Returns the active kid.
    pub fn ensure_active(&self, c: &Connection, now: &str) -> anyhow::Result<String> {
        if let Some(kid) = receipts::active_kid(c)? {
            if key_path(&self.dir, &kid).exists() {
                return Ok(kid);
            }
            tracing::warn!(key.kid = %kid, "private half of the active receipt key is missing; rotating to a new key");
        }
        rotate(&self.dir, c, now)
    }
}

fn key_path(dir: &Path, kid: &str) -> PathBuf {
    dir.join(format!("{kid}.pem"))
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
    let pem = key
        .to_pkcs8_pem(LineEnding::LF)
        .map_err(|e| anyhow::anyhow!("encoding key: {e}"))?;
    write_private(&key_path(dir, &kid), pem.as_bytes())?;
    // The caller's transaction makes the two statements atomic.
    receipts::activate(c, &kid, &x, now).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(kid)
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
    Ok(())
}
