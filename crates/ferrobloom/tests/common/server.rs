//! `Server`: a running redis-server in its own temp dir (start, stop, restart, connections,
//! INFO, replication waits, redis-cli and python3 helpers), `Stop` and `ProcOutput`.

use super::*;

// ---------------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------------

/// How to stop a server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    /// SIGKILL: nothing is saved (do SAVE / BGREWRITEAOF first, and wait for it).
    Kill,
    /// `SHUTDOWN NOSAVE`: graceful, writes nothing (AOF is fsynced).
    ShutdownNoSave,
    /// `SHUTDOWN SAVE`: graceful, writes dump.rdb even with `save ''`.
    ShutdownSave,
}

/// Output of a helper process (redis-cli, python3).
#[derive(Debug)]
pub struct ProcOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl ProcOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }

    /// Panic with stdout/stderr unless the process exited 0; returns stdout.
    pub fn assert_success(&self) -> &str {
        assert!(
            self.status.success(),
            "process failed ({}):\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.status,
            self.stdout,
            self.stderr
        );
        &self.stdout
    }
}

#[derive(Debug)]
enum StartError {
    /// The child exited; `addr_in_use` tells whether the log says the port was taken.
    Exited {
        status: ExitStatus,
        addr_in_use: bool,
    },
    Timeout,
}

/// A running redis-server in its own temp dir. Killed (and its dir removed) on drop.
pub struct Server {
    cfg: ServerBuilder,
    dir: PathBuf,
    port: u16,
    child: Mutex<Option<Child>>,
    keep_dir: bool,
    /// The log tail was already part of a panic message: don't print it again on drop.
    log_shown: AtomicBool,
}

impl Server {
    /// A server with the module loaded with default args.
    pub fn start() -> Server {
        ServerBuilder::new().start()
    }

    pub fn builder() -> ServerBuilder {
        ServerBuilder::new()
    }

    /// A replica (module loaded with default args) of `primary`; call
    /// `primary.wait_for_sync(&replica)` before relying on its data.
    pub fn start_replica_of(primary: &Server) -> Server {
        ServerBuilder::new().replica_of(primary).start()
    }

    /// Start from a builder. A failed start caused by a taken TCP port is retried with
    /// another port; any other failure panics with the log tail.
    pub fn start_with(cfg: ServerBuilder) -> Server {
        let dir = fresh_dir();
        let mut server = Server {
            cfg,
            dir,
            port: 0,
            child: Mutex::new(None),
            keep_dir: env::var_os("FERROBLOOM_KEEP_TEST_DIRS").is_some(),
            log_shown: AtomicBool::new(false),
        };
        let mut attempt = 0;
        loop {
            attempt += 1;
            server.port = free_port();
            match server.spawn_and_wait(start_timeout()) {
                Ok(()) => return server,
                Err(StartError::Exited {
                    addr_in_use: true, ..
                }) if attempt < 8 => {
                    // Someone grabbed the port between our probe and redis' bind: retry.
                    let _ = fs::remove_file(server.dir.join("redis.log"));
                    continue;
                }
                Err(e) => server.start_failed(e),
            }
        }
    }

    fn start_failed(&self, e: StartError) -> ! {
        let args = self.cfg.command_args(&self.dir, self.port);
        self.log_shown.store(true, Ordering::Relaxed);
        panic!(
            "redis-server failed to start ({e:?}) in {}\nargs: {args:?}\n--- stderr ---\n{}\n\
             --- redis.log (tail) ---\n{}",
            self.dir.display(),
            tail_of_file(&self.dir.join("stderr.log"), 20),
            self.log_tail(40)
        );
    }

    fn spawn_and_wait(&self, timeout: Duration) -> Result<(), StartError> {
        // A socket file left by a killed process would make us probe a dead path.
        let _ = fs::remove_file(self.socket_path());
        let stdout = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("stdout.log"))
            .expect("open stdout.log");
        let stderr = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join("stderr.log"))
            .expect("open stderr.log");
        let args = self.cfg.command_args(&self.dir, self.port);
        let bin = self
            .config()
            .server_bin
            .clone()
            .unwrap_or_else(redis_server_bin);
        let child = Command::new(&bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot spawn {}: {e} (install redis-server: `make deps`)",
                    redis_server_bin()
                )
            });
        *self.child.lock().unwrap() = Some(child);

        let start = Instant::now();
        let mut deadline = start + timeout;
        loop {
            {
                let mut guard = self.child.lock().unwrap();
                if let Some(child) = guard.as_mut() {
                    if let Ok(Some(status)) = child.try_wait() {
                        *guard = None;
                        let log = tail_of_file(&self.dir.join("redis.log"), 20);
                        let addr_in_use = log.contains("Address already in use");
                        return Err(StartError::Exited {
                            status,
                            addr_in_use,
                        });
                    }
                }
            }
            if self.socket_path().exists() {
                if let Ok(mut con) = self.raw_conn(ProtocolVersion::RESP2) {
                    match redis::cmd("PING").query::<String>(&mut con) {
                        Ok(_) => return Ok(()),
                        Err(e) if e.code() == Some("LOADING") => {
                            // Loading a dataset: allow more time, but not forever.
                            deadline = deadline.max(Instant::now() + Duration::from_secs(1));
                            if start.elapsed() > LOADING_TIMEOUT {
                                self.kill_child();
                                return Err(StartError::Timeout);
                            }
                        }
                        Err(_) => {}
                    }
                }
            }
            if Instant::now() > deadline {
                self.kill_child();
                return Err(StartError::Timeout);
            }
            sleep(Duration::from_millis(20));
        }
    }

    fn kill_child(&self) {
        if let Some(mut child) = self.child.lock().unwrap().take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    // ----- accessors -----

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn socket_path(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.join("redis.log")
    }

    pub fn rdb_path(&self) -> PathBuf {
        self.dir.join("dump.rdb")
    }

    /// Redis 7 keeps the AOF as several files in this directory.
    pub fn aof_dir(&self) -> PathBuf {
        self.dir.join("appendonlydir")
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.lock().unwrap().as_ref().map(|c| c.id())
    }

    pub fn config(&self) -> &ServerBuilder {
        &self.cfg
    }

    /// Change the configuration used by the next `start_again()` / `restart()`.
    pub fn config_mut(&mut self) -> &mut ServerBuilder {
        &mut self.cfg
    }

    /// `redis+unix://` URL of this server (`?protocol=resp3` when asked).
    pub fn url(&self, resp3: bool) -> String {
        format!(
            "redis+unix://{}{}",
            self.socket_path().display(),
            if resp3 { "?protocol=resp3" } else { "" }
        )
    }

    // ----- connections -----

    fn raw_conn(&self, protocol: ProtocolVersion) -> RedisResult<Connection> {
        let info = ConnectionAddr::Unix(self.socket_path())
            .into_connection_info()?
            // No `CLIENT SETINFO` on connect: Redis 7.0 does not know it, and the ignored
            // errors would show up in INFO errorstats.
            .set_redis_settings(
                RedisConnectionInfo::default()
                    .set_protocol(protocol)
                    .set_skip_set_lib_name(),
            );
        let client = redis::Client::open(info)?;
        client.get_connection_with_timeout(Duration::from_secs(5))
    }

    fn conn_with(&self, protocol: ProtocolVersion) -> Connection {
        let con = self
            .raw_conn(protocol)
            .unwrap_or_else(|e| panic!("cannot connect to {}: {e}", self.socket_path().display()));
        con.set_read_timeout(Some(CONN_TIMEOUT)).unwrap();
        con.set_write_timeout(Some(CONN_TIMEOUT)).unwrap();
        con
    }

    /// RESP2 connection over the unix socket.
    pub fn conn(&self) -> Connection {
        self.conn_with(ProtocolVersion::RESP2)
    }

    /// RESP3 connection over the unix socket (HELLO 3).
    pub fn conn_resp3(&self) -> Connection {
        self.conn_with(ProtocolVersion::RESP3)
    }

    // ----- lifecycle -----

    /// Child still running and PING answers (LOADING counts as alive).
    pub fn is_alive(&self) -> bool {
        {
            let mut guard = self.child.lock().unwrap();
            match guard.as_mut() {
                None => return false,
                Some(child) => {
                    if !matches!(child.try_wait(), Ok(None)) {
                        return false;
                    }
                }
            }
        }
        match self.raw_conn(ProtocolVersion::RESP2) {
            Ok(mut con) => {
                let _ = con.set_read_timeout(Some(Duration::from_secs(5)));
                match redis::cmd("PING").query::<String>(&mut con) {
                    Ok(_) => true,
                    Err(e) => e.code() == Some("LOADING"),
                }
            }
            Err(_) => false,
        }
    }

    /// Exit status if the process has exited (e.g. crashed), without waiting.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        let mut guard = self.child.lock().unwrap();
        guard.as_mut().and_then(|c| c.try_wait().ok().flatten())
    }

    /// Stop the process; the dir (rdb, aof, log) stays for `start_again()`.
    pub fn stop(&mut self, how: Stop) {
        match how {
            Stop::Kill => self.kill_child(),
            Stop::ShutdownNoSave | Stop::ShutdownSave => {
                let word = if how == Stop::ShutdownSave {
                    "SAVE"
                } else {
                    "NOSAVE"
                };
                if let Ok(mut con) = self.raw_conn(ProtocolVersion::RESP2) {
                    // The server closes the connection: an I/O error is the expected reply.
                    let r = redis::cmd("SHUTDOWN").arg(word).query::<Value>(&mut con);
                    if let Err(e) = &r {
                        if e.code().is_some() {
                            panic!("SHUTDOWN {word} refused: {e}\n{}", self.log_tail(20));
                        }
                    }
                }
                let deadline = Instant::now() + Duration::from_secs(30);
                loop {
                    let mut guard = self.child.lock().unwrap();
                    match guard.as_mut() {
                        None => break,
                        Some(child) => {
                            if let Ok(Some(_)) = child.try_wait() {
                                *guard = None;
                                break;
                            }
                        }
                    }
                    drop(guard);
                    if Instant::now() > deadline {
                        self.kill_child();
                        panic!(
                            "SHUTDOWN {word} did not stop the server\n{}",
                            self.log_tail(20)
                        );
                    }
                    sleep(Duration::from_millis(20));
                }
            }
        }
        let _ = fs::remove_file(self.socket_path());
    }

    /// Start a stopped server again with the same dir, port and config (reloads dump.rdb or
    /// the AOF); waits until loading has finished. Panics if already running.
    pub fn start_again(&mut self) {
        assert!(
            self.child.lock().unwrap().is_none(),
            "start_again() on a running server: call stop() first"
        );
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.spawn_and_wait(start_timeout()) {
                Ok(()) => return,
                // Same port required: wait a bit for whoever holds it.
                Err(StartError::Exited {
                    addr_in_use: true, ..
                }) if attempt < 20 => sleep(Duration::from_millis(250)),
                Err(e) => self.start_failed(e),
            }
        }
    }

    /// SIGKILL + start again (do SAVE / BGREWRITEAOF before, as the test needs).
    pub fn restart(&mut self) {
        self.restart_with(Stop::Kill);
    }

    pub fn restart_with(&mut self, how: Stop) {
        self.stop(how);
        self.start_again();
    }

    /// Graceful `SHUTDOWN NOSAVE` (the server stays stopped; `start_again()` to bring it back).
    pub fn shutdown_nosave(&mut self) {
        self.stop(Stop::ShutdownNoSave);
    }

    // ----- introspection -----

    /// Last `n` lines of redis.log.
    pub fn log_tail(&self, n: usize) -> String {
        tail_of_file(&self.log_path(), n)
    }

    /// Whole redis.log.
    pub fn log(&self) -> String {
        fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// `INFO <section>` parsed into `field -> value`.
    pub fn info(&self, section: &str) -> HashMap<String, String> {
        let mut con = self.conn();
        let text: String = redis::cmd("INFO")
            .arg(section)
            .query(&mut con)
            .unwrap_or_else(|e| panic!("INFO {section}: {e}"));
        parse_info(&text)
    }

    /// The kind of server this is (from `INFO server`).
    pub fn kind(&self) -> ServerKind {
        let info = self.info("server");
        match info.get("server_name").map(String::as_str) {
            Some("valkey") => {
                let v = info.get("valkey_version").cloned().unwrap_or_default();
                if v.starts_with("8.") {
                    ServerKind::Valkey8
                } else {
                    ServerKind::Valkey9
                }
            }
            _ => match info.get("redis_version") {
                Some(v) if v.starts_with("7.") => ServerKind::Redis7,
                _ => ServerKind::Redis8,
            },
        }
    }

    /// One INFO field (`None` if absent).
    pub fn info_field(&self, section: &str, field: &str) -> Option<String> {
        self.info(section).remove(field)
    }

    pub fn used_memory(&self) -> u64 {
        self.info_field("memory", "used_memory")
            .and_then(|v| v.parse().ok())
            .expect("used_memory")
    }

    /// `DEBUG DIGEST` of the whole dataset (compare primary vs replica, before vs after reload).
    pub fn digest(&self) -> String {
        let mut con = self.conn();
        redis::cmd("DEBUG")
            .arg("DIGEST")
            .query(&mut con)
            .expect("DEBUG DIGEST")
    }

    // ----- replication -----

    /// Wait until `replica` (a replica of `self`) has finished its sync: link up, no sync in
    /// progress, and its offset equals our `master_repl_offset`. Panics after REPL_TIMEOUT.
    pub fn wait_for_sync(&self, replica: &Server) {
        self.wait_for_replica(replica, REPL_TIMEOUT, true);
    }

    /// Wait until `replica` has processed everything we propagated so far (use after writes).
    pub fn wait_for_offset(&self, replica: &Server) {
        self.wait_for_replica(replica, REPL_TIMEOUT, false);
    }

    pub fn wait_for_replica(&self, replica: &Server, timeout: Duration, full_sync: bool) {
        let deadline = Instant::now() + timeout;
        loop {
            let p = self.info("replication");
            let r = replica.info("replication");
            let link_up = r.get("master_link_status").map(String::as_str) == Some("up");
            let syncing = r.get("master_sync_in_progress").map(String::as_str) == Some("1");
            let p_off = p.get("master_repl_offset").cloned().unwrap_or_default();
            let r_off = r.get("slave_repl_offset").cloned().unwrap_or_default();
            if link_up && !(full_sync && syncing) && !p_off.is_empty() && p_off == r_off {
                return;
            }
            if Instant::now() > deadline {
                panic!(
                    "replica did not catch up in {timeout:?}: link_up={link_up} \
                     syncing={syncing} primary master_repl_offset={p_off} replica \
                     slave_repl_offset={r_off}\n--- primary log ---\n{}\n--- replica log ---\n{}",
                    self.log_tail(20),
                    replica.log_tail(20)
                );
            }
            sleep(Duration::from_millis(10));
        }
    }

    // ----- helper processes -----

    /// Run `redis-cli -s <socket> args...`; returns stdout without trailing newlines.
    /// Panics if redis-cli exits non-zero (use `cli_output` to inspect failures).
    /// Without a tty redis-cli prints raw replies (no `(integer)` decoration), and an error
    /// reply is printed as its text (`ERR ...`) with exit status 0 (redis-cli 7.0).
    pub fn cli<S: AsRef<str>>(&self, args: &[S]) -> String {
        let out = self.cli_output(args);
        out.assert_success();
        out.stdout.trim_end_matches('\n').to_string()
    }

    pub fn cli_output<S: AsRef<str>>(&self, args: &[S]) -> ProcOutput {
        self.cli_with_stdin(args, b"")
    }

    /// Run redis-cli with `input` on stdin (e.g. `--pipe` or `-x`).
    pub fn cli_with_stdin<S: AsRef<str>>(&self, args: &[S], input: &[u8]) -> ProcOutput {
        let mut cmd = Command::new(redis_cli_bin());
        cmd.arg("-s").arg(self.socket_path());
        cmd.args(args.iter().map(|s| s.as_ref()));
        run_process(cmd, input, &redis_cli_bin())
    }

    /// Run `python3 -c <code> args...` with `REDIS_SOCKET` (and `REDIS_PORT`) set.
    pub fn python(&self, code: &str, args: &[&str]) -> ProcOutput {
        let mut cmd = Command::new(python_bin());
        cmd.arg("-c").arg(code);
        cmd.args(args);
        self.python_env(&mut cmd);
        run_process(cmd, b"", &python_bin())
    }

    /// Run `python3 <script> args...` with `REDIS_SOCKET` (and `REDIS_PORT`) set.
    pub fn python_file(&self, script: impl AsRef<Path>, args: &[&str]) -> ProcOutput {
        let mut cmd = Command::new(python_bin());
        cmd.arg(script.as_ref());
        cmd.args(args);
        self.python_env(&mut cmd);
        run_process(cmd, b"", &python_bin())
    }

    fn python_env(&self, cmd: &mut Command) {
        cmd.env("REDIS_SOCKET", self.socket_path());
        cmd.env("REDIS_PORT", self.port.to_string());
        cmd.env("PYTHONUNBUFFERED", "1");
        cmd.env("PYTHONDONTWRITEBYTECODE", "1");
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let crashed = self.exit_status();
        self.kill_child();
        if (std::thread::panicking() || crashed.is_some())
            && !self.log_shown.load(Ordering::Relaxed)
        {
            // Shown by the test runner for failing tests.
            eprintln!(
                "--- redis.log of server in {} (exit: {crashed:?}) ---\n{}",
                self.dir.display(),
                self.log_tail(30)
            );
        }
        if self.keep_dir {
            eprintln!("keeping test dir {}", self.dir.display());
        } else {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}
