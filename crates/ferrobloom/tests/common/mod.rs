//! Integration-test harness: starts throw-away `redis-server` processes with the module loaded.
//!
//! Use from a test file as `mod common;` (from a test in its own directory, `tests/<name>/main.rs`:
//! `#[path = "../common/mod.rs"] mod common;`) and `use common::*;`.
//!
//! Rules:
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
mod builder;
pub mod cf;
pub mod cluster;
pub mod gauges;
pub mod process;
pub mod rdb;
pub mod redisbloom;
pub mod rng;
mod server;
pub mod workload;

pub use builder::*;
pub use server::*;

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

/// RedisBloom's BF.INFO keys, in its order: the default reply must hold exactly
/// these (strict clients such as go-redis refuse any other).
pub const BF_INFO_KEYS: [&str; 5] = [
    "Capacity",
    "Size",
    "Number of filters",
    "Number of items inserted",
    "Expansion rate",
];

/// How long a fresh server may take to answer PING.
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
    /// Redis 8.x (8.2.3 from `scripts/peers.sh redis8`): bundles RedisBloom on its own
    /// (not loaded by the tests' servers), has ACL categories and unprefixed module configs.
    Redis8,
    /// Valkey 8.x.
    Valkey8,
    /// Valkey 9.x.
    Valkey9,
}

impl ServerKind {
    pub fn is_valkey(self) -> bool {
        matches!(self, ServerKind::Valkey8 | ServerKind::Valkey9)
    }

    /// Module ACL categories (`RedisModule_AddACLCategory`: Valkey 8+, Redis 7.4+).
    pub fn has_acl_categories(self) -> bool {
        self != ServerKind::Redis7
    }

    /// Unprefixed module configuration names (`REDISMODULE_CONFIG_UNPREFIXED`: Redis 8+),
    /// so ferrobloom also answers to RedisBloom 8's `bf-error-rate` and the like.
    pub fn has_unprefixed_configs(self) -> bool {
        self == ServerKind::Redis8
    }

    /// Modules the server lists in MODULE LIST besides ferrobloom (Valkey 9 runs its
    /// Lua engine as a built-in module, Redis 8 its vector sets).
    pub fn builtin_modules(self) -> &'static [&'static str] {
        match self {
            ServerKind::Valkey9 => &["lua"],
            ServerKind::Redis8 => &["vectorset"],
            _ => &[],
        }
    }
}

/// A reference peer fetched by `scripts/peers.sh` (`make test` runs it first): `"redisbloom"`
/// (RedisBloom 2.8.2's `redisbloom.so`), `"valkey8"` or `"valkey9"` (a `valkey-server`),
/// `"redis8"` (Redis 8.2.3's `redis-server`).
/// `FERROBLOOM_PEER_<NAME>` (e.g. `FERROBLOOM_PEER_REDISBLOOM`) overrides the path; the
/// default is the peers cache (`FERROBLOOM_PEERS`, else `$HOME/.cache/ferrobloom-peers`).
/// `None` when the file is not there: a test that needs it says so and skips.
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
        "redis8" => "redis-8.2.3/redis-server",
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
