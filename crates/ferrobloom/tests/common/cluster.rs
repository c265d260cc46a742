//! A throw-away Redis Cluster on loopback for integration tests.
//!
//! `Cluster::start(3, true)` starts 3 primaries (and one replica per primary) with the module
//! loaded on every node, each node a harness `Server` in its own dir (its own `nodes.conf`),
//! creates the cluster with `redis-cli --cluster create`, attaches the replicas with
//! `CLUSTER MEET` + `CLUSTER REPLICATE`, and waits until every node reports
//! `cluster_state:ok` and `redis-cli --cluster check` finds all nodes in agreement. Every node
//! is killed (and its dir removed) on drop, like any `Server`.
//!
//! The cluster bus port is set explicitly (`cluster-port`, a free loopback port), so the node
//! ports can be anywhere in the ephemeral range (the default bus port, port + 10000, would
//! overflow above 55535).

use std::collections::HashMap;
use std::process::Command;
use std::time::{Duration, Instant};

use redis::cluster::{ClusterClient, ClusterConnection};
use redis::{ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, Value};

use super::{free_port, redis_cli_bin, run_process, ProcOutput, Server, ServerBuilder};
use super::{wait_until, CONN_TIMEOUT};

/// How long the cluster may take to converge (gossip, replica sync) after a change.
pub const CLUSTER_TIMEOUT: Duration = Duration::from_secs(60);

/// One cluster node: the server and its node id.
pub struct Node {
    pub server: Server,
    pub id: String,
    pub bus_port: u16,
}

impl Node {
    pub fn port(&self) -> u16 {
        self.server.port()
    }

    /// `127.0.0.1:<port>`, as redis-cli and MOVED replies spell it.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port())
    }

    pub fn conn(&self) -> redis::Connection {
        self.server.conn()
    }

    fn start(builder: &ServerBuilder) -> Node {
        // The bus port is probed like the client port; a clash between the probe and
        // redis' bind is retried with fresh ports.
        let mut attempt = 0;
        loop {
            attempt += 1;
            let bus_port = free_port();
            let b = builder.clone().args(&[
                "--cluster-enabled",
                "yes",
                "--cluster-config-file",
                "nodes.conf",
                "--cluster-port",
                &bus_port.to_string(),
            ]);
            let started = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| b.start()));
            match started {
                Ok(server) => {
                    let id: String = redis::cmd("CLUSTER")
                        .arg("MYID")
                        .query(&mut server.conn())
                        .expect("CLUSTER MYID");
                    return Node {
                        server,
                        id,
                        bus_port,
                    };
                }
                Err(e) if attempt >= 3 => std::panic::resume_unwind(e),
                Err(_) => continue,
            }
        }
    }
}

/// A running cluster: `replicas[i]` (if any) replicates `primaries[i]`.
pub struct Cluster {
    pub primaries: Vec<Node>,
    pub replicas: Vec<Node>,
}

impl Cluster {
    /// `primaries` primaries with the default module args, plus one replica each if asked.
    pub fn start(primaries: usize, with_replicas: bool) -> Cluster {
        Self::start_with(primaries, with_replicas, &ServerBuilder::new())
    }

    /// Like `start`, every node configured from `builder` (module args, extra config: the
    /// same on every node, as in production).
    pub fn start_with(primaries: usize, with_replicas: bool, builder: &ServerBuilder) -> Cluster {
        let primaries: Vec<Node> = (0..primaries).map(|_| Node::start(builder)).collect();
        let mut args = vec!["--cluster".to_string(), "create".to_string()];
        args.extend(primaries.iter().map(Node::addr));
        args.push("--cluster-yes".to_string());
        let out = redis_cli(&args);
        let text = out.assert_success();
        assert!(
            text.contains("All 16384 slots covered"),
            "redis-cli --cluster create did not cover all slots:\n{text}\n{}",
            out.stderr
        );

        let replicas: Vec<Node> = if with_replicas {
            (0..primaries.len()).map(|_| Node::start(builder)).collect()
        } else {
            Vec::new()
        };
        let first = &primaries[0];
        for r in &replicas {
            let _: () = redis::cmd("CLUSTER")
                .arg("MEET")
                .arg("127.0.0.1")
                .arg(first.port())
                .arg(first.bus_port)
                .query(&mut r.conn())
                .expect("CLUSTER MEET");
        }
        for (r, p) in replicas.iter().zip(&primaries) {
            // The replica must have learnt the primary's id through gossip first.
            let mut con = r.conn();
            wait_until(CLUSTER_TIMEOUT, "CLUSTER REPLICATE to succeed", || {
                redis::cmd("CLUSTER")
                    .arg("REPLICATE")
                    .arg(&p.id)
                    .query::<()>(&mut con)
                    .is_ok()
            });
        }
        let cluster = Cluster {
            primaries,
            replicas,
        };
        for (r, p) in cluster.replicas.iter().zip(&cluster.primaries) {
            p.server.wait_for_sync(&r.server);
        }
        cluster.wait_stable();
        cluster
    }

    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.primaries.iter().chain(self.replicas.iter())
    }

    /// Waits until every node says `cluster_state:ok`, knows every other node, and
    /// `redis-cli --cluster check` reports agreement, full coverage and no open slot.
    pub fn wait_stable(&self) {
        let total = self.primaries.len() + self.replicas.len();
        let deadline = Instant::now() + CLUSTER_TIMEOUT;
        for n in self.nodes() {
            let mut con = n.conn();
            loop {
                let text: String = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query(&mut con)
                    .expect("CLUSTER INFO");
                let info = super::parse_info(&text);
                let ok = info.get("cluster_state").map(String::as_str) == Some("ok")
                    && info.get("cluster_known_nodes") == Some(&total.to_string())
                    && info.get("cluster_slots_assigned").map(String::as_str) == Some("16384");
                if ok {
                    break;
                }
                assert!(
                    Instant::now() < deadline,
                    "node {} not stable after {CLUSTER_TIMEOUT:?}:\n{text}",
                    n.addr()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        loop {
            let out = self.check();
            let ok = out.status.success()
                && out
                    .stdout
                    .contains("All nodes agree about slots configuration")
                && out.stdout.contains("All 16384 slots covered")
                && !out.stdout.contains("[ERR]")
                && !out.stdout.contains("[WARNING]");
            if ok {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "redis-cli --cluster check never passed:\n{}\n{}",
                out.stdout,
                out.stderr
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// `redis-cli --cluster check` against the first primary.
    pub fn check(&self) -> ProcOutput {
        redis_cli(&[
            "--cluster".to_string(),
            "check".to_string(),
            self.primaries[0].addr(),
        ])
    }

    /// `redis-cli --cluster reshard`: moves `slots` slots from `primaries[from]` to
    /// `primaries[to]` (redis-cli takes the source's lowest slots), then waits until the
    /// cluster is stable again. Returns redis-cli's output and its wall time.
    pub fn reshard(&self, from: usize, to: usize, slots: usize) -> (ProcOutput, Duration) {
        let args = [
            "--cluster".to_string(),
            "reshard".to_string(),
            self.primaries[0].addr(),
            "--cluster-from".to_string(),
            self.primaries[from].id.clone(),
            "--cluster-to".to_string(),
            self.primaries[to].id.clone(),
            "--cluster-slots".to_string(),
            slots.to_string(),
            "--cluster-yes".to_string(),
        ];
        let t = Instant::now();
        let out = redis_cli(&args);
        let took = t.elapsed();
        out.assert_success();
        self.wait_stable();
        (out, took)
    }

    /// A cluster-aware client (redis-rs `ClusterClient`) seeded with every primary.
    pub fn client(&self) -> ClusterConnection {
        let nodes: Vec<redis::ConnectionInfo> = self
            .primaries
            .iter()
            .map(|n| {
                ConnectionAddr::Tcp("127.0.0.1".to_string(), n.port())
                    .into_connection_info()
                    .expect("connection info")
                    .set_redis_settings(RedisConnectionInfo::default().set_skip_set_lib_name())
            })
            .collect();
        ClusterClient::builder(nodes)
            .connection_timeout(Duration::from_secs(5))
            .response_timeout(CONN_TIMEOUT)
            .build()
            .expect("ClusterClient")
            .get_connection()
            .expect("cluster connection")
    }

    /// `CLUSTER SLOTS` as seen by the first primary: (first slot, last slot, owner port).
    pub fn slot_ranges(&self) -> Vec<(u16, u16, u16)> {
        let v: Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut self.primaries[0].conn())
            .expect("CLUSTER SLOTS");
        let Value::Array(ranges) = v else {
            panic!("CLUSTER SLOTS: unexpected reply {v:?}")
        };
        ranges
            .iter()
            .map(|r| {
                let Value::Array(items) = r else {
                    panic!("CLUSTER SLOTS entry {r:?}")
                };
                let int = |v: &Value| match v {
                    Value::Int(i) => *i as u16,
                    other => panic!("CLUSTER SLOTS: not an integer: {other:?}"),
                };
                let Value::Array(owner) = &items[2] else {
                    panic!("CLUSTER SLOTS owner {:?}", items[2])
                };
                (int(&items[0]), int(&items[1]), int(&owner[1]))
            })
            .collect()
    }

    /// Index into `primaries` of each slot's owner (16384 entries).
    pub fn slot_owners(&self) -> Vec<usize> {
        let by_port: HashMap<u16, usize> = self
            .primaries
            .iter()
            .enumerate()
            .map(|(i, n)| (n.port(), i))
            .collect();
        let mut owners = vec![usize::MAX; 16384];
        for (a, b, port) in self.slot_ranges() {
            let i = *by_port
                .get(&port)
                .unwrap_or_else(|| panic!("slot owner {port} is not a primary"));
            for s in a..=b {
                owners[s as usize] = i;
            }
        }
        assert!(
            owners.iter().all(|&o| o != usize::MAX),
            "CLUSTER SLOTS leaves slots unassigned"
        );
        owners
    }

    /// The slots `primaries[i]` owns, ascending.
    pub fn slots_of(&self, i: usize) -> Vec<u16> {
        self.slot_owners()
            .iter()
            .enumerate()
            .filter(|(_, &o)| o == i)
            .map(|(s, _)| s as u16)
            .collect()
    }

    /// `CLUSTER KEYSLOT` of every key (one pipeline to the first primary).
    pub fn key_slots<K: AsRef<[u8]>>(&self, keys: &[K]) -> Vec<u16> {
        let mut out = Vec::with_capacity(keys.len());
        let mut con = self.primaries[0].conn();
        for chunk in keys.chunks(1000) {
            let mut p = redis::pipe();
            for k in chunk {
                p.cmd("CLUSTER").arg("KEYSLOT").arg(k.as_ref());
            }
            let v: Vec<u16> = p.query(&mut con).expect("CLUSTER KEYSLOT");
            out.extend(v);
        }
        out
    }

    pub fn key_slot(&self, key: &str) -> u16 {
        self.key_slots(&[key])[0]
    }

    /// Index into `primaries` of the node serving `key`.
    pub fn owner_of(&self, key: &str) -> usize {
        self.slot_owners()[self.key_slot(key) as usize]
    }
}

/// Runs `redis-cli <args>` (no `-s`: the cluster manager takes `host:port` arguments).
pub fn redis_cli<S: AsRef<str>>(args: &[S]) -> ProcOutput {
    let mut cmd = Command::new(redis_cli_bin());
    cmd.args(args.iter().map(|s| s.as_ref()));
    run_process(cmd, b"", &redis_cli_bin())
}
