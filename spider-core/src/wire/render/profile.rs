//! A browser's profile folder, in the temporary folder and named after the crawl's process
//! and the browser's number: removed with the browser, by the crawl or by the browser's
//! reaper when the crawl was killed; and should both have failed (a crawl killed before its
//! reaper started), swept by the next crawl that starts a browser.

use std::path::{Path, PathBuf};

const PREFIX: &str = "spiderling-browser-";

/// The profile folder of this process's browser `number`.
pub(super) fn folder(number: u64) -> PathBuf {
    std::env::temp_dir().join(format!("{PREFIX}{}-{number}", std::process::id()))
}

/// SIGKILL every process of the browser whose profile is `dir` (each names it, its network
/// service and renderers too, which outlive a browser killed a moment and write its cache
/// meanwhile), then remove the folder. Blocking.
pub(super) fn remove(dir: &Path) {
    let mut named = b"--user-data-dir=".to_vec();
    named.extend_from_slice(dir.as_os_str().as_encoded_bytes());
    named.push(0);
    if let Ok(processes) = std::fs::read_dir("/proc") {
        for process in processes.flatten() {
            let Some(pid) = process.file_name().to_str().and_then(|pid| pid.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(cmdline) = std::fs::read(process.path().join("cmdline")) else { continue };
            if cmdline.windows(named.len()).any(|arg| arg == named.as_slice()) {
                if let Some(pid) = rustix::process::Pid::from_raw(pid) {
                    let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

/// Remove the profile folders of crawls no longer running, once a process. Blocking.
/// "Running" is read in this process's `/proc`: a crawl in another PID namespace that
/// shares this temporary folder would look gone and lose its browser's profile.
pub(super) fn sweep_once() {
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep);
}

fn sweep() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else { return };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(crawl_of) else { continue };
        if !Path::new("/proc").join(pid.to_string()).exists() {
            tracing::debug!(target: "spiderling", folder = %entry.path().display(), "a browser profile left \
                by a crawl that is gone: removed");
            remove(&entry.path());
        }
    }
}

/// The crawl process whose browser profile folder is named `name`.
fn crawl_of(name: &str) -> Option<u32> {
    let (pid, number) = name.strip_prefix(PREFIX)?.split_once('-')?;
    number.parse::<u64>().ok()?;
    pid.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_names_its_crawl_and_nothing_else_is_taken_for_one() {
        let mine = folder(7);
        let name = mine.file_name().and_then(|name| name.to_str()).unwrap_or_default();
        assert_eq!(crawl_of(name), Some(std::process::id()));
        assert_eq!(crawl_of("spiderling-browser-123-45"), Some(123));
        for other in
            ["spiderling-browser-123", "spiderling-browser-x-1", "spiderling-browser-1-x", "chromium-1-1"]
        {
            assert_eq!(crawl_of(other), None, "{other}");
        }
    }

    #[test]
    fn a_crawl_gone_has_its_folder_swept_and_a_running_ones_stays() {
        // A pid above the kernel's largest (4,194,304) is no process's.
        let gone = std::env::temp_dir().join(format!("{PREFIX}4194305-1"));
        let running = folder(u64::MAX);
        for dir in [&gone, &running] {
            std::fs::create_dir_all(dir.join("Default")).unwrap_or_else(|e| panic!("{e}"));
        }
        sweep();
        let (gone_left, running_left) = (gone.exists(), running.exists());
        let _ = std::fs::remove_dir_all(&running);
        assert!(!gone_left, "the folder of a crawl gone is removed");
        assert!(running_left, "this process's folder stays");
    }
}
