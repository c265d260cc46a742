//! Integration-test harness: starts throw-away `redis-server` processes with the module loaded.
//!
//! Use from a test file as `mod common;` and `use common::*;`.
//!
//! Rules (see shared/notes/toolchain.md):
//! - never `use ferrobloom` here or in a test file: linking the module crate into a test binary
//!   installs the Redis allocator, which aborts outside Redis;
//! - every server gets its own temp dir (`--dir`), unix socket and loopback TCP port, so tests
//!   can run in parallel;
//! - the module is found via `FERROBLOOM_MODULE` (a path, or `none` to start servers without
//!   it), else `libferrobloom.so` next to the test binary (`target/<profile>/deps/`, where
//!   `cargo test` puts the cdylib when the crate type includes `rlib`), else in its parent.
//!
//! Environment knobs:
//! - `FERROBLOOM_MODULE=/path/libferrobloom.so` or `FERROBLOOM_MODULE=none`
//! - `FERROBLOOM_KEEP_TEST_DIRS=1`: keep every server's dir (rdb, aof, redis.log) after the test
//! - `REDIS_SERVER`, `REDIS_CLI`, `PYTHON`: binaries to use (default `redis-server`,
//!   `redis-cli`, `python3` from PATH)
//! - `FERROBLOOM_START_TIMEOUT_SECS`: how long a server may take to answer PING (default 10;
//!   raise it for a `REDIS_SERVER` wrapper that runs redis-server under valgrind)
#![allow(dead_code)]

pub mod bf;
pub mod bf_persist;
pub mod cf;
pub mod cluster;
pub mod process;
pub mod rdb;
pub mod redisbloom;
pub mod rng;
pub mod workload;

use std::collections::HashMap;
use std::env;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use redis::{
    Connection, ConnectionAddr, FromRedisValue, IntoConnectionInfo, ProtocolVersion,
    RedisConnectionInfo, RedisResult, ServerError, Value,
};

/// How long a fresh server may take to answer PING.
/// RedisBloom's BF.INFO keys, in its order: the default reply must hold exactly
/// these (strict clients such as go-redis refuse any other).
pub const BF_INFO_KEYS: [&str; 5] = [
    "Capacity",
    "Size",
    "Number of filters",
    "Number of items inserted",
    "Expansion rate",
];

pub const START_TIMEOUT: Duration = Duration::from_secs(10);

/// `START_TIMEOUT`, or `FERROBLOOM_START_TIMEOUT_SECS` when set (slow wrappers: valgrind).
pub fn start_timeout() -> Duration {
    env::var("FERROBLOOM_START_TIMEOUT_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(START_TIMEOUT, Duration::from_secs)
}
/// How long a restarted server may keep answering `-LOADING` (large datasets).
pub const LOADING_TIMEOUT: Duration = Duration::from_secs(120);
/// Default timeout of `wait_for_sync` / `wait_for_offset`.
pub const REPL_TIMEOUT: Duration = Duration::from_secs(20);
/// Read/write timeout set on connections returned by `conn()`/`conn_resp3()`, so that a hung
/// server fails the test instead of hanging CI. Call `con.set_read_timeout(None)` to lift it.
pub const CONN_TIMEOUT: Duration = Duration::from_secs(60);

const MODULE_FILE: &str = "libferrobloom.so";

// ---------------------------------------------------------------------------------------------
// Locating binaries and the module
// ---------------------------------------------------------------------------------------------

fn redis_server_bin() -> String {
    env::var("REDIS_SERVER").unwrap_or_else(|_| "redis-server".to_string())
}

fn redis_cli_bin() -> String {
    env::var("REDIS_CLI").unwrap_or_else(|_| "redis-cli".to_string())
}

fn python_bin() -> String {
    env::var("PYTHON").unwrap_or_else(|_| "python3".to_string())
}

/// A reference peer fetched by `scripts/peers.sh` (`make test` runs it first): `"redisbloom"`
/// (RedisBloom 2.8.2's `redisbloom.so`), `"valkey8"` or `"valkey9"` (a `valkey-server`).
/// `FERROBLOOM_PEER_<NAME>` (e.g. `FERROBLOOM_PEER_REDISBLOOM`) overrides the path; the
/// default is the peers cache (`FERROBLOOM_PEERS`, else `$HOME/.cache/ferrobloom-peers`).
/// `None` when the file is not there: a test that needs it says so and skips.
/// A reply as compact comparable text, keeping every type distinction the tests
/// care about: `1` integer, `#t`/`#f` boolean, `nil`, `+OK`/`+text` simple string,
/// `"text"` bulk string (`<n bytes>` above `max_bulk` bytes), `!text` error (also
/// inside arrays), `[a,b]` array, `~[a]` set, `{k:v}` map, `0.5` double.
pub fn show_value(v: &Value, max_bulk: usize) -> String {
    let show = |x: &Value| show_value(x, max_bulk);
    let list = |items: &[Value]| items.iter().map(show).collect::<Vec<_>>().join(",");
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::Boolean(b) => if *b { "#t" } else { "#f" }.into(),
        Value::Okay => "+OK".into(),
        Value::SimpleString(s) => format!("+{s}"),
        Value::BulkString(b) if b.len() > max_bulk => format!("<{} bytes>", b.len()),
        Value::BulkString(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::ServerError(_) => format!("!{}", value_err_text(v).unwrap_or_default()),
        Value::Array(a) => format!("[{}]", list(a)),
        Value::Set(a) => format!("~[{}]", list(a)),
        Value::Map(m) => format!(
            "{{{}}}",
            m.iter()
                .map(|(k, v)| format!("{}:{}", show(k), show(v)))
                .collect::<Vec<_>>()
                .join(",")
        ),
        Value::Double(d) => format!("{d}"),
        other => format!("{other:?}"),
    }
}

/// 200 never-added binary items (NUL and 0xff bytes), for the probe sets.
pub fn binary_probes() -> impl Iterator<Item = Vec<u8>> {
    (0..200u32).map(|i| {
        let mut p = b"probe\x00\xff".to_vec();
        p.extend_from_slice(&i.to_le_bytes());
        p
    })
}

/// Which server the tests run against (`REDIS_SERVER`): features and small
/// differences are asserted per server, never skipped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerKind {
    /// Redis 7.0.x (Debian's package).
    Redis7,
    /// Valkey 8.x.
    Valkey8,
    /// Valkey 9.x.
    Valkey9,
}

impl ServerKind {
    pub fn is_valkey(self) -> bool {
        self != ServerKind::Redis7
    }

    /// Module ACL categories (`RedisModule_AddACLCategory`: Valkey 8+, Redis 7.4+).
    pub fn has_acl_categories(self) -> bool {
        self.is_valkey()
    }

    /// Modules the server lists in MODULE LIST besides ferrobloom (Valkey 9 runs its
    /// Lua engine as a built-in module).
    pub fn builtin_modules(self) -> &'static [&'static str] {
        match self {
            ServerKind::Valkey9 => &["lua"],
            _ => &[],
        }
    }
}

pub fn peer_path(name: &str) -> Option<PathBuf> {
    if let Ok(p) = env::var(format!("FERROBLOOM_PEER_{}", name.to_ascii_uppercase())) {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let cache = env::var("FERROBLOOM_PEERS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(env::var("HOME").unwrap_or_else(|_| "/root".into()))
                .join(".cache/ferrobloom-peers")
        });
    let rel = match name {
        "redisbloom" => "redisbloom-2.8.2/redisbloom.so",
        "valkey8" => "valkey-8.1.8/valkey-server",
        "valkey9" => "valkey-9.1.2/valkey-server",
        _ => return None,
    };
    let p = cache.join(rel);
    p.is_file().then_some(p)
}

/// Path of `libferrobloom.so`, or `None` when `FERROBLOOM_MODULE=none`.
///
/// Order: `FERROBLOOM_MODULE` (must exist), then the directory of the running test binary
/// (`target/<profile>/deps/`), then its parent (`target/<profile>/`). Panics if not found.
pub fn module_path() -> Option<PathBuf> {
    if let Ok(p) = env::var("FERROBLOOM_MODULE") {
        if p.is_empty() {
            // treat an empty value as unset
        } else if p.eq_ignore_ascii_case("none") {
            return None;
        } else {
            let path = PathBuf::from(&p);
            assert!(
                path.is_file(),
                "FERROBLOOM_MODULE={p} does not exist or is not a file"
            );
            return Some(path.canonicalize().unwrap_or(path));
        }
    }
    let exe = env::current_exe().expect("current_exe() failed");
    let mut tried = Vec::new();
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        let candidate = d.join(MODULE_FILE);
        if candidate.is_file() {
            return Some(candidate);
        }
        tried.push(candidate);
        dir = d.parent();
    }
    panic!(
        "{MODULE_FILE} not found (looked at {tried:?}). Build it with `cargo test` / \
         `cargo build` (crate-type must include both cdylib and rlib so that `cargo test` \
         builds the .so), or set FERROBLOOM_MODULE=/path/to/{MODULE_FILE} \
         (FERROBLOOM_MODULE=none starts servers without the module)."
    );
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    listener.local_addr().expect("local_addr").port()
}

static DIR_COUNTER: AtomicUsize = AtomicUsize::new(0);

fn fresh_dir() -> PathBuf {
    let base = env::temp_dir();
    loop {
        let n = DIR_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!("ferrobloom-{}-{n}-{nanos:08x}", std::process::id()));
        match fs::create_dir(&dir) {
            Ok(()) => {
                // The unix socket path must fit in sockaddr_un (107 bytes).
                let sock_len = dir.join("redis.sock").as_os_str().len();
                assert!(
                    sock_len < 100,
                    "temp dir path too long for a unix socket ({sock_len} bytes): {}; \
                     set TMPDIR to a shorter directory",
                    dir.display()
                );
                return dir;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => panic!("cannot create test dir {}: {e}", dir.display()),
        }
    }
}

fn tail_of_file(path: &Path, n: usize) -> String {
    match fs::read(path) {
        Ok(bytes) => {
            let text = String::from_utf8_lossy(&bytes);
            let lines: Vec<&str> = text.lines().collect();
            let start = lines.len().saturating_sub(n);
            lines[start..].join("\n")
        }
        Err(e) => format!("<cannot read {}: {e}>", path.display()),
    }
}

// ---------------------------------------------------------------------------------------------
// Builder
// ---------------------------------------------------------------------------------------------

/// Which module to load.
#[derive(Clone, Debug)]
pub enum ModuleChoice {
    /// `module_path()`: FERROBLOOM_MODULE or the cdylib next to the test binary.
    Default,
    /// Start a plain redis-server.
    None,
    /// An explicit .so (e.g. a reference build of another module).
    Path(PathBuf),
}

/// Configuration of a test server. Fields are public so a test can change them between
/// `stop()` and `start_again()` via `Server::config_mut()`.
#[derive(Clone, Debug)]
pub struct ServerBuilder {
    pub module: ModuleChoice,
    /// Arguments after `--loadmodule <so>`, e.g. `["ERROR_RATE", "0.02"]`.
    pub module_args: Vec<String>,
    /// Extra redis-server arguments, appended after the `--loadmodule` line, e.g.
    /// `["--bf.bf-error-rate", "0.02", "--maxmemory", "100mb"]`.
    pub extra_args: Vec<String>,
    pub appendonly: bool,
    /// `aof-use-rdb-preamble` (Redis default yes). `aof_rewrite` callbacks only run with `no`.
    pub aof_rdb_preamble: bool,
    /// TCP port of the primary to replicate from (`--replicaof 127.0.0.1 <port>`).
    pub replica_of: Option<u16>,
    /// The server binary, instead of `REDIS_SERVER` (RedisBloom always runs on
    /// Debian's redis-server, whatever server the suite tests).
    pub server_bin: Option<String>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        ServerBuilder {
            module: ModuleChoice::Default,
            module_args: Vec::new(),
            extra_args: Vec::new(),
            appendonly: false,
            aof_rdb_preamble: true,
            replica_of: None,
            server_bin: None,
        }
    }
}

impl ServerBuilder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Start without any module (also possible for all servers with FERROBLOOM_MODULE=none).
    pub fn no_module(mut self) -> Self {
        self.module = ModuleChoice::None;
        self
    }

    /// Load this .so instead of libferrobloom.so.
    pub fn module_path(mut self, path: impl Into<PathBuf>) -> Self {
        self.module = ModuleChoice::Path(path.into());
        self
    }

    /// Module load arguments, e.g. `.module_args(&["ERROR_RATE", "0.02"])`.
    pub fn module_args<S: AsRef<str>>(mut self, args: &[S]) -> Self {
        self.module_args
            .extend(args.iter().map(|s| s.as_ref().to_string()));
        self
    }

    /// One extra redis-server argument (e.g. `"--maxmemory"`, then `.arg("10mb")`).
    pub fn arg(mut self, arg: impl AsRef<str>) -> Self {
        self.extra_args.push(arg.as_ref().to_string());
        self
    }

    /// Extra redis-server arguments, e.g. `.args(&["--bf.bf-expansion-factor", "4"])`.
    pub fn args<S: AsRef<str>>(mut self, args: &[S]) -> Self {
        self.extra_args
            .extend(args.iter().map(|s| s.as_ref().to_string()));
        self
    }

    /// A config directive as `--name value...`, e.g. `.config("maxmemory-policy", &["allkeys-lru"])`.
    pub fn config<S: AsRef<str>>(mut self, name: &str, values: &[S]) -> Self {
        self.extra_args.push(format!("--{name}"));
        self.extra_args
            .extend(values.iter().map(|s| s.as_ref().to_string()));
        self
    }

    pub fn appendonly(mut self, on: bool) -> Self {
        self.appendonly = on;
        self
    }

    pub fn aof_rdb_preamble(mut self, on: bool) -> Self {
        self.aof_rdb_preamble = on;
        self
    }

    /// Run this binary instead of `REDIS_SERVER`.
    pub fn server_bin(mut self, bin: impl Into<String>) -> Self {
        self.server_bin = Some(bin.into());
        self
    }

    pub fn replica_of(mut self, primary: &Server) -> Self {
        self.replica_of = Some(primary.port());
        self
    }

    /// Start the server; panics (with the log tail) if it does not answer PING in time.
    pub fn start(self) -> Server {
        Server::start_with(self)
    }

    fn module_so(&self) -> Option<PathBuf> {
        match &self.module {
            ModuleChoice::Default => module_path(),
            ModuleChoice::None => None,
            ModuleChoice::Path(p) => Some(p.clone()),
        }
    }

    fn command_args(&self, dir: &Path, port: u16) -> Vec<String> {
        let d = dir.to_string_lossy().to_string();
        let mut a: Vec<String> = vec![
            "--port".into(),
            port.to_string(),
            "--bind".into(),
            "127.0.0.1".into(),
            "--dir".into(),
            d.clone(),
            "--unixsocket".into(),
            format!("{d}/redis.sock"),
            "--unixsocketperm".into(),
            "700".into(),
            "--logfile".into(),
            format!("{d}/redis.log"),
            "--daemonize".into(),
            "no".into(),
            "--save".into(),
            "".into(),
            "--appendonly".into(),
            if self.appendonly { "yes" } else { "no" }.into(),
            "--aof-use-rdb-preamble".into(),
            if self.aof_rdb_preamble { "yes" } else { "no" }.into(),
            "--enable-debug-command".into(),
            "yes".into(),
            "--enable-module-command".into(),
            "yes".into(),
            "--repl-diskless-sync-delay".into(),
            "0".into(),
        ];
        if let Some(p) = self.replica_of {
            a.extend(["--replicaof".into(), "127.0.0.1".into(), p.to_string()]);
        }
        if let Some(so) = self.module_so() {
            a.push("--loadmodule".into());
            a.push(so.to_string_lossy().to_string());
            a.extend(self.module_args.iter().cloned());
        }
        a.extend(self.extra_args.iter().cloned());
        a
    }
}

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

    /// One INFO field (`None` if absent).
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
            _ => ServerKind::Redis7,
        }
    }

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

fn run_process(mut cmd: Command, input: &[u8], what: &str) -> ProcOutput {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("cannot spawn {what}: {e} (run `make deps`)"));
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
        // stdin dropped here: EOF
    });
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut out_pipe = child.stdout.take().unwrap();
    let mut err_pipe = child.stderr.take().unwrap();
    let err_reader = std::thread::spawn(move || {
        let _ = err_pipe.read_to_end(&mut stderr);
        stderr
    });
    let _ = out_pipe.read_to_end(&mut stdout);
    let stderr = err_reader.join().unwrap_or_default();
    let _ = writer.join();
    let status = child.wait().expect("wait for helper process");
    ProcOutput {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Parse `INFO` text (`field:value` lines; `#` headers skipped).
pub fn parse_info(text: &str) -> HashMap<String, String> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Commands and errors
// ---------------------------------------------------------------------------------------------

/// Run a command given as strings: `exec::<i64>(&mut con, &["BF.ADD", "k", "x"])`.
pub fn exec<T: FromRedisValue>(con: &mut Connection, args: &[&str]) -> RedisResult<T> {
    let (name, rest) = args.split_first().expect("exec: empty command");
    let mut c = redis::cmd(name);
    for a in rest {
        c.arg(*a);
    }
    c.query(con)
}

/// Run a command that must fail; returns `err_text` of its reply.
pub fn exec_err(con: &mut Connection, args: &[&str]) -> String {
    err_text(exec::<Value>(con, args))
}

/// The text of a server error reply exactly as it was on the wire after the `-`
/// (`ERR not found`, `Filter is full`, `WRONGTYPE Operation against ...`).
///
/// redis-rs splits the line at its first space into a code (`ERR`, `WRONGTYPE`, or for
/// unprefixed texts simply the first word, e.g. `Filter`) and the rest as detail; this joins
/// them back. Panics if the result is `Ok`, a client-side error (I/O, parse, type conversion),
/// or a pipeline/transaction error with more than one failing command.
pub fn err_text<T: std::fmt::Debug>(r: RedisResult<T>) -> String {
    match r {
        Ok(v) => panic!("expected an error reply, got Ok({v:?})"),
        Err(e) => {
            let shown = e.to_string();
            match e.into_server_errors() {
                Some(errs) if errs.len() == 1 => server_error_text(&errs[0].1),
                Some(errs) => panic!(
                    "expected one error reply, got {} (use into_server_errors()): {shown}",
                    errs.len()
                ),
                None => panic!("expected an error reply from the server, got: {shown}"),
            }
        }
    }
}

/// Wire text of one `ServerError` (see `err_text`).
pub fn server_error_text(e: &ServerError) -> String {
    match e.details() {
        Some(d) => format!("{} {}", e.code(), d),
        None => e.code().to_string(),
    }
}

/// Wire text of an error element inside a reply (e.g. from a pipeline with
/// `.ignore_errors()`, or an EXEC array); `None` if `v` is not an error.
pub fn value_err_text(v: &Value) -> Option<String> {
    match v {
        Value::ServerError(e) => Some(server_error_text(e)),
        _ => None,
    }
}

/// Poll `cond` every 10 ms until it is true; panics with `what` after `timeout`.
pub fn wait_until(timeout: Duration, what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !cond() {
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}");
        }
        sleep(Duration::from_millis(10));
    }
}
