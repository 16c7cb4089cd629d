//! The one atomic writer: every file the tool writes (result.json, junit.xml, the charts, stored
//! baselines) goes through [`write_file_atomic`], so a reader never sees half a file.

use serde::Serialize;
use std::io::Write as _;
use std::path::Path;

/// The mode of a file this tool writes, before the process umask applies: readable by everyone,
/// writable by its owner (0644 under the usual umask 022), as a normal file create would leave it,
/// not the 0600 of a temporary file. Results, reports, charts and stored baselines are read by
/// other users and CI tools (artifact uploads, caches shared between jobs).
pub const WRITTEN_FILE_MODE: u32 = 0o644;

/// Writes `bytes` to `path` atomically: a temporary file in the same directory, flushed and
/// renamed over the old one, so a reader (or an interrupted run) never sees half a file. The file
/// gets [`WRITTEN_FILE_MODE`] minus the process umask. The directory is created when missing.
pub fn write_file_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut builder = tempfile::Builder::new();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        // Applied at creation (open's mode argument), so the umask still applies.
        builder.permissions(std::fs::Permissions::from_mode(WRITTEN_FILE_MODE));
    }
    let mut tmp = builder.tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// Writes `value` as pretty JSON (with a final newline) to `path` with [`write_file_atomic`].
pub fn write_json_atomic(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let mut text = serde_json::to_vec_pretty(value).map_err(std::io::Error::other)?;
    text.push(b'\n');
    write_file_atomic(path, &text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_the_file_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out/result.json");
        write_json_atomic(&path, &serde_json::json!({"a": 1})).unwrap();
        write_json_atomic(&path, &serde_json::json!({"a": 2})).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&text).unwrap()["a"],
            2
        );
        // No temporary files are left beside it.
        assert_eq!(
            std::fs::read_dir(path.parent().unwrap()).unwrap().count(),
            1
        );
    }

    /// The process umask, read from `/proc/self/status` (reading it through `umask(2)` would
    /// change it for every thread for a moment).
    #[cfg(target_os = "linux")]
    fn process_umask() -> u32 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("Umask:")).unwrap();
        u32::from_str_radix(line.trim_start_matches("Umask:").trim(), 8).unwrap()
    }

    /// The permission bits of `path`.
    #[cfg(target_os = "linux")]
    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    /// Regression: result.json was written 0600 (the temporary file's mode), unreadable to the
    /// CI user that uploads artifacts.
    #[cfg(target_os = "linux")]
    #[test]
    fn written_files_get_0644_minus_the_umask_not_0600() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        write_json_atomic(&path, &serde_json::json!({"a": 1})).unwrap();
        assert_eq!(mode(&path), 0o644 & !process_umask());
        // Also when it replaces a file.
        write_file_atomic(&path, b"{}").unwrap();
        assert_eq!(mode(&path), 0o644 & !process_umask());
        assert_eq!(std::fs::read(&path).unwrap(), b"{}");
    }

    #[test]
    fn missing_directories_are_created() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("nested/deeper/out.json");
        write_json_atomic(&path, &serde_json::json!([])).unwrap();
        assert!(path.is_file());
    }
}
