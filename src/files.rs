//! File-system permissions for what holds secrets: the data dir and the keys
//! dir owner-only (0700), the database, backups and key files 0600.

use std::path::Path;

/// Owner-only directory (0700).
pub fn restrict_dir(dir: &Path) -> std::io::Result<()> {
    set_mode(dir, 0o700)
}

/// Owner-only file (0600).
pub fn restrict_file(path: &Path) -> std::io::Result<()> {
    set_mode(path, 0o600)
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
