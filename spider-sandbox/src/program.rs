//! Where a server program of the system is: the tests start Debian's own.

use std::io::{self, ErrorKind};
use std::path::PathBuf;

/// The program `name`: the path in the environment variable `var`, else on `PATH`, else
/// in `/usr/sbin` (where Debian puts servers, off a user's `PATH`); `NotFound` with
/// `not_found`, which says how to install it, when it is nowhere.
pub(crate) fn system_program(name: &str, var: &str, not_found: &str) -> io::Result<PathBuf> {
    if let Some(path) = std::env::var_os(var) {
        return Ok(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).map(|dir| dir.join(name)).find(|p| p.is_file()));
    on_path
        .or_else(|| Some(PathBuf::from("/usr/sbin").join(name)).filter(|p| p.is_file()))
        .ok_or_else(|| io::Error::new(ErrorKind::NotFound, not_found.to_owned()))
}
