//! Signals to a test server's process: SIGKILL (a crash, not a shutdown) and
//! SIGSTOP/SIGCONT (freeze a server, e.g. a replica, without closing its sockets).
//!
//! Use from a test file (after `mod common;`) as plain `Server` methods.
#![allow(dead_code)]

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use super::{wait_until, Server, Stop};

impl Server {
    /// Send `sig` (a name for `kill -s`: `KILL`, `STOP`, `CONT`) to the server process.
    pub fn signal(&self, sig: &str) {
        let pid = self
            .pid()
            .unwrap_or_else(|| panic!("signal {sig}: the server is not running"));
        let status = Command::new("kill")
            .arg("-s")
            .arg(sig)
            .arg(pid.to_string())
            .status()
            .unwrap_or_else(|e| panic!("cannot run kill: {e}"));
        assert!(status.success(), "kill -s {sig} {pid} failed: {status}");
    }

    /// `kill -9` the server (it must be running and must not have exited on its own),
    /// wait for it to die, and check that SIGKILL is what ended it. The dir (AOF, RDB,
    /// log) stays; bring the server back with `start_again()`.
    pub fn crash(&mut self) {
        assert!(
            self.exit_status().is_none(),
            "crash(): the server had already exited: {:?}\n{}",
            self.exit_status(),
            self.log_tail(30)
        );
        self.signal("KILL");
        let mut status = None;
        wait_until(
            Duration::from_secs(10),
            "the server to die of SIGKILL",
            || {
                status = self.exit_status();
                status.is_some()
            },
        );
        let status = status.unwrap_or_else(|| unreachable!());
        assert_eq!(status.signal(), Some(9), "server exit: {status:?}");
        // Reaps the child and removes the stale socket.
        self.stop(Stop::Kill);
    }
}
