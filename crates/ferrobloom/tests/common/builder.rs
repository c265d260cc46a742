//! `ServerBuilder`: the configuration of a test server (module, module arguments, extra
//! redis-server arguments, AOF, replica of, server binary) and the command line it becomes.

use super::*;

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

    pub(super) fn module_so(&self) -> Option<PathBuf> {
        match &self.module {
            ModuleChoice::Default => module_path(),
            ModuleChoice::None => None,
            ModuleChoice::Path(p) => Some(p.clone()),
        }
    }

    pub(super) fn command_args(&self, dir: &Path, port: u16) -> Vec<String> {
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
            // Tests kill servers (SIGKILL) and replay their AOF: with the
            // default `everysec`, a write the server postponed while a
            // background fsync ran is lost with the process (Valkey 9 lost an
            // acknowledged BF.MERGE so); `always` writes before replying.
            "--appendfsync".into(),
            "always".into(),
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
