//! Every file nkc writes (`compile -o`, `run --trace`, `run --output DIR`, `compare --svg`,
//! `sim --trace`, `sim --output DIR`, `suggest --write`) goes through [`write_atomically`], and
//! every command that writes checks first, with [`refuse_inputs_as_outputs`], that no output is
//! one of its inputs.
//!
//! Invariants:
//! - the target is replaced whole or not at all: the bytes go to a temporary file in the target's
//!   directory, which is flushed, synced and renamed over the target only once complete; on any
//!   failure (a full disk, a quota, a file-size limit: `SIGXFSZ` is ignored so that the write
//!   returns `EFBIG` instead of killing the process) the temporary file is removed and the target
//!   keeps its bytes;
//! - an existing target keeps its permission bits;
//! - a target that exists and is neither a regular file nor a directory (`/dev/null`,
//!   `/dev/stdout`, a FIFO, a terminal) is written in place, as `cp` and the shell's `>` do: it is
//!   opened for writing and never replaced, so `-o /dev/null` run as root leaves `/dev/null` a
//!   device (a rename over it would turn it into a regular file that every later reader of
//!   `/dev/null` sees);
//! - a target that is a symbolic link stays a link: the file it points to (through every link of
//!   the chain) is the one replaced;
//! - an output that is the same file as an input (after following links: the same device and
//!   inode) is an error before anything is written, or run.
//!
//! Every error is a [`WriteError`], whose text is a sentence for the user.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Why a file was not written. The Display text is the sentence the user sees.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// An I/O error on `path` (following its links, or on the temporary file).
    #[error("cannot write `{}`: {error}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
    /// `path` is a directory.
    #[error("cannot write `{}`: it is a directory", path.display())]
    IsDirectory { path: PathBuf },
    /// An output of the command (`what`: its flag; `output`: its path, when it is not spelled
    /// as the input) is the same file as `input`.
    #[error(
        "the output of {what}{} is the input `{}`: writing it would destroy the input; \
         name another file",
        named_output(output.as_deref()),
        input.display()
    )]
    OutputIsInput {
        what: String,
        output: Option<PathBuf>,
        input: PathBuf,
    },
}

/// ` (`PATH`)`, or nothing.
fn named_output(output: Option<&Path>) -> String {
    match output {
        Some(o) => format!(" (`{}`)", o.display()),
        None => String::new(),
    }
}

/// Writes `bytes` to `path`, replacing it whole or not at all (see the module's invariants).
/// The error is a sentence for the user: `cannot write `PATH`: WHY`.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), WriteError> {
    write_atomically_with(path, |w| w.write_all(bytes))
}

/// [`write_atomically`], the bytes given by `fill` (which writes them to a buffered writer).
pub fn write_atomically_with(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), WriteError> {
    let err = |error: std::io::Error| WriteError::Io {
        path: path.to_path_buf(),
        error,
    };
    ignore_file_size_signal();
    // `metadata` follows every link, the kernel's own (`/dev/stdout` → `/proc/self/fd/1` → a
    // pipe) included.
    if let Ok(m) = std::fs::metadata(path) {
        if !m.is_file() && !m.is_dir() {
            return write_in_place(path, fill).map_err(err);
        }
    }
    let target = follow_links(path).map_err(err)?;
    let dir = match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let existing = std::fs::metadata(&target).ok();
    if existing.as_ref().is_some_and(|m| m.is_dir()) {
        return Err(WriteError::IsDirectory {
            path: path.to_path_buf(),
        });
    }
    let prefix = format!(".{name}.");
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).suffix(".tmp");
    #[cfg(unix)]
    {
        // A new file gets what `File::create` gives it (0o666 under the umask).
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let tmp = builder.tempfile_in(&dir).map_err(err)?;
    if let Some(m) = &existing {
        // Exactly the target's bits (not masked by the umask, as creation is).
        std::fs::set_permissions(tmp.path(), m.permissions()).map_err(err)?;
    }
    {
        let mut w = BufWriter::new(tmp.as_file());
        fill(&mut w).map_err(err)?;
        w.flush().map_err(err)?;
    }
    tmp.as_file().sync_all().map_err(err)?;
    tmp.persist(&target).map_err(|e| err(e.error))?;
    // Make the rename durable too (best effort: not every file system syncs directories).
    if let Ok(d) = std::fs::File::open(&dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// Writes into the existing non-regular file `path` (a device, a FIFO, a terminal) without
/// replacing it: there is no whole-or-nothing for a stream.
fn write_in_place(
    path: &Path,
    fill: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let file = std::fs::OpenOptions::new().write(true).open(path)?;
    let mut w = BufWriter::new(file);
    fill(&mut w)?;
    w.flush()
}

/// The file `path` names once every symbolic link is followed (`path` itself when it is no link,
/// or does not exist). A link to a file that does not exist yet gives that file's path.
fn follow_links(path: &Path) -> std::io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    // The kernel's own limit on a chain of links (ELOOP past it).
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = std::fs::read_link(&p)?;
                p = match p.parent() {
                    Some(parent) if to.is_relative() => parent.join(to),
                    _ => to,
                };
            }
            _ => return Ok(p),
        }
    }
    Err(std::io::Error::other("too many levels of symbolic links"))
}

/// A write past the process's file-size limit (`ulimit -f`) sends `SIGXFSZ`, which kills the
/// process by default; ignored, the write fails with `EFBIG` and nkc reports it.
fn ignore_file_size_signal() {
    #[cfg(unix)]
    {
        static ONCE: std::sync::Once = std::sync::Once::new();
        ONCE.call_once(|| {
            // SAFETY: setting a signal's disposition to SIG_IGN installs no handler and touches no
            // memory of ours; it is the documented way to make `write` return EFBIG instead.
            unsafe {
                libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            }
        });
    }
}

/// Whether two paths name the same existing file (after following links: same device and
/// inode). A path that does not exist is no file.
pub fn same_file(a: &Path, b: &Path) -> bool {
    let (Ok(ma), Ok(mb)) = (std::fs::metadata(a), std::fs::metadata(b)) else {
        return false;
    };
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        ma.dev() == mb.dev() && ma.ino() == mb.ino()
    }
    #[cfg(not(unix))]
    {
        let _ = (ma, mb);
        matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
    }
}

/// An error when an output is one of the inputs (the same file, [`same_file`]): `what` names the
/// output's flag (`--trace`, `-o`, ...). Checked before anything runs, so the input survives.
/// The check of [`refuse_inputs_as_outputs`] for a run (`run`, `sim`): its `--trace` file and one
/// `NAME.npy` per output in `--output DIR`, against the program or kernel file and its `--input`
/// files.
pub fn refuse_run_outputs<'a>(
    source: &Path,
    inputs: &[(String, std::path::PathBuf)],
    trace: Option<&Path>,
    output_dir: Option<&Path>,
    output_names: impl IntoIterator<Item = &'a str>,
) -> Result<(), WriteError> {
    let mut read: Vec<&Path> = vec![source];
    read.extend(inputs.iter().map(|(_, p)| p.as_path()));
    let files: Vec<std::path::PathBuf> = match output_dir {
        Some(dir) => output_names
            .into_iter()
            .map(|n| dir.join(format!("{n}.npy")))
            .collect(),
        None => Vec::new(),
    };
    let outputs = trace
        .map(|p| ("--trace", p))
        .into_iter()
        .chain(files.iter().map(|p| ("--output", p.as_path())));
    refuse_inputs_as_outputs(outputs, &read)
}

pub fn refuse_inputs_as_outputs<'a>(
    outputs: impl IntoIterator<Item = (&'a str, &'a Path)>,
    inputs: &[&Path],
) -> Result<(), WriteError> {
    for (what, out) in outputs {
        if let Some(input) = inputs.iter().find(|i| same_file(i, out)) {
            return Err(WriteError::OutputIsInput {
                what: what.to_string(),
                output: (input != &out).then(|| out.to_path_buf()),
                input: input.to_path_buf(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("nkc-write-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn replaces_whole_and_leaves_no_temporary() {
        let d = scratch("whole");
        let f = d.join("a.txt");
        std::fs::write(&f, "old").unwrap();
        write_atomically(&f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }

    #[test]
    fn a_failing_writer_leaves_the_target_and_no_temporary() {
        let d = scratch("fail");
        let f = d.join("a.txt");
        std::fs::write(&f, "old").unwrap();
        let e = write_atomically_with(&f, |w| {
            w.write_all(b"partial")?;
            Err(std::io::Error::other("disk full"))
        })
        .unwrap_err();
        let e = e.to_string();
        assert!(e.contains("disk full") && e.contains("a.txt"), "{e}");
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }

    #[cfg(unix)]
    #[test]
    fn keeps_mode_and_links() {
        use std::os::unix::fs::PermissionsExt;
        let d = scratch("links");
        let f = d.join("real.txt");
        std::fs::write(&f, "old").unwrap();
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = d.join("link.txt");
        std::os::unix::fs::symlink("real.txt", &link).unwrap();
        write_atomically(&link, b"new").unwrap();
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
        let mode = std::fs::metadata(&f).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert!(same_file(&link, &f));
        assert!(refuse_inputs_as_outputs([("--trace", link.as_path())], &[&f]).is_err());
        assert!(refuse_inputs_as_outputs([("--trace", d.join("x").as_path())], &[&f]).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_fifo_is_written_through_and_stays_a_fifo() {
        use std::os::unix::fs::FileTypeExt;
        let d = scratch("fifo");
        let f = d.join("pipe");
        let c = std::ffi::CString::new(f.to_str().unwrap()).unwrap();
        // SAFETY: `c` is a NUL-terminated path that outlives the call.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        // Held open for reading and writing, without blocking: the FIFO has a reader when nkc
        // opens it, and a write that went elsewhere reads as nothing instead of hanging.
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let mut end = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(&f)
            .unwrap();
        write_atomically(&f, b"through the pipe").unwrap();
        let mut got = [0u8; 64];
        let n = end.read(&mut got).unwrap_or(0);
        assert_eq!(&got[..n], b"through the pipe");
        let t = std::fs::symlink_metadata(&f).unwrap().file_type();
        assert!(t.is_fifo(), "the FIFO was replaced: {t:?}");
        assert_eq!(
            std::fs::read_dir(&d).unwrap().count(),
            1,
            "a temporary was left"
        );
    }
}
