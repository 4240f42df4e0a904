//! File-system permissions for what holds secrets: the data dir and the keys
//! dir owner-only (0700), the database, backups and key files 0600.

use std::path::Path;

/// Makes the data dir (and its parents) unless it is there; a file in its
/// place is named as such, not reported as "File exists".
pub fn create_data_dir(dir: &Path) -> anyhow::Result<()> {
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!(
            "{} is a file, not a directory: give --data-dir (HDS_DATA_DIR) a directory, new or hds's own",
            dir.display()
        );
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        anyhow::anyhow!(
            "creating the data dir {}: {e} (is it a directory this user may write?)",
            dir.display()
        )
    })
}

/// Owner-only directory (0700).
pub fn restrict_dir(dir: &Path) -> std::io::Result<()> {
    set_mode(dir, 0o700)
}

/// Where the first start of an empty data dir writes the admin's sign-in
/// link and the first Source's keys (0600), instead of printing them.
pub const INITIAL_CREDENTIALS: &str = "initial-credentials.json";

/// Makes the data dir owner-only (0700) when it holds only what hds keeps
/// there (`hds.*`, `keys`, `base-url`, `initial-credentials.json`, a
/// volume's `lost+found`). A directory
/// that holds other files as well (`--data-dir .`, `--data-dir /tmp`) keeps
/// its mode: hds must not lock others out of it. The name of one such file
/// is returned, for a warning; the database and the keys stay private by
/// their own modes.
pub fn restrict_data_dir(dir: &Path) -> std::io::Result<Option<String>> {
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name().to_string_lossy().into_owned();
        let ours = name.starts_with("hds.")
            || ["keys", "base-url", INITIAL_CREDENTIALS, "lost+found"].contains(&name.as_str());
        if !ours {
            return Ok(Some(name));
        }
    }
    restrict_dir(dir)?;
    Ok(None)
}

/// What to say when [`restrict_data_dir`] left a directory's mode alone.
pub fn shared_data_dir_warning(dir: &Path, other: &str) -> String {
    format!(
        "{} also holds {other}, which hds did not make, so its mode was left as it is (hds makes a data dir of its own 0700); the database stays 0600 and the keys directory 0700",
        dir.display()
    )
}

/// Owner-only file (0600). A file of another user (a database copied in as
/// root, say) cannot be made private: the error says whose it is and what
/// to do, not only "Operation not permitted".
pub fn restrict_file(path: &Path) -> std::io::Result<()> {
    set_mode(path, 0o600).map_err(|e| not_ours(path, e))
}

/// `e` with the owner of `path` named, when it is a refusal to change a
/// file hds does not own.
#[cfg(target_os = "linux")]
fn not_ours(path: &Path, e: std::io::Error) -> std::io::Error {
    use std::os::unix::fs::MetadataExt;
    if e.kind() != std::io::ErrorKind::PermissionDenied {
        return e;
    }
    let me = rustix::process::geteuid().as_raw();
    match std::fs::metadata(path).map(|m| m.uid()) {
        Ok(owner) if owner != me => std::io::Error::new(
            e.kind(),
            format!(
                "{e}: {} belongs to another user (uid {owner}) than the one hds runs as (uid {me}); give it to that user (chown) with the rest of the data dir",
                path.display()
            ),
        ),
        _ => e,
    }
}

#[cfg(not(target_os = "linux"))]
fn not_ours(_: &Path, e: std::io::Error) -> std::io::Error {
    e
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_: &Path, _: u32) -> std::io::Result<()> {
    Ok(())
}

/// Bytes free to an unprivileged writer on the file system holding `dir`
/// (`statvfs`: available blocks times fragment size); None where it cannot
/// be read.
#[cfg(target_os = "linux")]
pub fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

#[cfg(not(target_os = "linux"))]
pub fn free_bytes(_: &Path) -> Option<u64> {
    None
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    /// What hds itself wrote (the first start's credentials file included)
    /// leaves the directory hds's own; anything else makes it shared.
    #[test]
    fn the_credentials_file_is_hds_s_own() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["hds.db", "hds.db-wal", super::INITIAL_CREDENTIALS] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("keys")).unwrap();
        assert_eq!(super::restrict_data_dir(dir.path()).unwrap(), None);
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        std::fs::write(dir.path().join("notes.txt"), "theirs").unwrap();
        assert_eq!(
            super::restrict_data_dir(dir.path()).unwrap().as_deref(),
            Some("notes.txt")
        );
    }
}
