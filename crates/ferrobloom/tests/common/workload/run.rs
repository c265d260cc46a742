//! Running the write load against a server (`write_load`), replaying it on a reference
//! server, and the checks that compare a server with the model or with another server.

use super::*;

// ---------------------------------------------------------------------------------------------
// Running a load
// ---------------------------------------------------------------------------------------------

/// What a writer did: the acknowledged commands with their replies, the command that
/// got no reply (the server died under it), and the state to continue from.
pub struct Run {
    pub log: Vec<(Op, Value)>,
    pub inflight: Option<Op>,
    pub error: Option<String>,
    pub gen: Gen,
    pub model: Model,
}

/// Counters the writer publishes while it runs.
#[derive(Default)]
pub struct Progress {
    /// Commands whose reply arrived.
    pub acked: AtomicUsize,
    /// Commands written to the socket (acked + at most one in flight).
    pub sent: AtomicUsize,
    /// Ask the writer to stop after its current command.
    pub stop: AtomicBool,
}

/// Stops a writer whose scope is unwinding: a failed check inside `thread::scope`
/// would otherwise wait forever for a writer that runs until the server goes away.
pub struct StopOnPanic<'a>(pub &'a Progress);

impl Drop for StopOnPanic<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.stop.store(true, Ordering::SeqCst);
        }
    }
}

/// Send `max_ops` generated commands one at a time, each after the previous reply,
/// recording every reply in the model; stop early at the first client error (the
/// server was killed) or when asked to.
pub fn write_load(
    con: &mut Connection,
    mut gen: Gen,
    mut model: Model,
    max_ops: usize,
    progress: &Progress,
) -> Run {
    let mut log = Vec::new();
    while log.len() < max_ops && !progress.stop.load(Ordering::SeqCst) {
        let op = gen.next_op(&model);
        progress.sent.fetch_add(1, Ordering::SeqCst);
        match con.req_command(&cmd_of(&op.args)) {
            Ok(v) => {
                model.apply(&op, &v);
                log.push((op, v));
                progress.acked.fetch_add(1, Ordering::SeqCst);
            }
            Err(e) => {
                return Run {
                    log,
                    inflight: Some(op),
                    error: Some(e.to_string()),
                    gen,
                    model,
                }
            }
        }
    }
    Run {
        log,
        inflight: None,
        error: None,
        gen,
        model,
    }
}

/// Run the setup commands (each must succeed) and return their log.
pub fn setup(con: &mut Connection, model: &mut Model) -> Vec<(Op, Value)> {
    Gen::setup()
        .into_iter()
        .map(|op| {
            let v = raw(con, &op.args);
            model.apply(&op, &v);
            (op, v)
        })
        .collect()
}

/// Replay acknowledged commands on the reference server: every reply must be the one
/// the original server gave (same state, same command, same answer). Updates `truth`.
pub fn replay(reference: &mut Connection, truth: &mut Model, log: &[(Op, Value)], what: &str) {
    for (i, (op, v)) in log.iter().enumerate() {
        let got = reference
            .req_command(&cmd_of(&op.args))
            .unwrap_or_else(|e| panic!("{what}: replay: {e}"));
        assert_eq!(
            show(&got),
            show(v),
            "{what}: command #{i} {} replied differently on the reference",
            show_args(&op.args)
        );
        truth.apply(op, &got);
    }
}

/// Replay one command on the reference with whatever reply it gets.
pub fn replay_unacked(reference: &mut Connection, truth: &mut Model, op: &Op) {
    let v = reference
        .req_command(&cmd_of(&op.args))
        .expect("replay of the in-flight command");
    truth.apply(op, &v);
}

pub fn same_dataset(a: &mut Connection, b: &mut Connection) -> bool {
    db_digest(a) == db_digest(b)
}

/// The datasets must be equal, key by key (reports the first differing key).
pub fn assert_same_dataset(a: &mut Connection, b: &mut Connection, model: &Model, what: &str) {
    assert_eq!(dbsize(a), dbsize(b), "{what}: DBSIZE");
    let keys = model.keys();
    let da = digest_values(a, &keys);
    let db = digest_values(b, &keys);
    for ((k, x), y) in keys.iter().zip(&da).zip(&db) {
        assert_eq!(x, y, "{what}: DEBUG DIGEST-VALUE {k}");
    }
    assert_eq!(db_digest(a), db_digest(b), "{what}: DEBUG DIGEST");
}

/// Everything the model promises holds on this server: every acknowledged member
/// answers 1, counts are at least (exact keys: exactly) acked adds minus acked deletes,
/// deleted items of exact keys are gone, and the INFO totals are the acked ones.
pub fn check_model(con: &mut Connection, model: &Model, what: &str) {
    assert_eq!(
        dbsize(con),
        (model.bf.len() + model.cf.len()) as i64,
        "{what}: DBSIZE"
    );
    for (key, m) in &model.bf {
        let r = multi(con, "BF.MEXISTS", key, &m.items);
        if let Some(i) = r.iter().position(|x| *x != 1) {
            panic!(
                "{what}: {key}: acknowledged item {:?} is missing ({} of {} missing)",
                String::from_utf8_lossy(&m.items[i]),
                r.iter().filter(|x| **x != 1).count(),
                r.len()
            );
        }
        let info = info_ints(con, "BF.INFO", key);
        assert_eq!(
            info["Number of items inserted"], m.inserted,
            "{what}: {key}: BF.INFO items"
        );
        assert_eq!(
            int(&raw(con, &strs(&["BF.CARD", key]))),
            m.inserted,
            "{what}: {key}: BF.CARD"
        );
    }
    for (key, m) in &model.cf {
        let live = m.live();
        let r = multi(con, "CF.MEXISTS", key, &live);
        if let Some(i) = r.iter().position(|x| *x != 1) {
            panic!(
                "{what}: {key}: live item {:?} is missing",
                String::from_utf8_lossy(&live[i])
            );
        }
        let counts = cf_counts(con, key, &m.items);
        for (item, c) in m.items.iter().zip(&counts) {
            let net = m.net(item);
            if exact(key) {
                assert_eq!(
                    *c,
                    net,
                    "{what}: {key}: CF.COUNT {:?}",
                    String::from_utf8_lossy(item)
                );
            } else {
                assert!(
                    *c >= net,
                    "{what}: {key}: CF.COUNT {:?} = {c} < {net} acked copies",
                    String::from_utf8_lossy(item)
                );
            }
        }
        if exact(key) {
            let gone: Vec<Vec<u8>> = m.items.iter().filter(|i| m.net(i) == 0).cloned().collect();
            let r = multi(con, "CF.MEXISTS", key, &gone);
            assert!(
                r.iter().all(|x| *x == 0),
                "{what}: {key}: a deleted item is still present"
            );
        }
        let info = info_ints(con, "CF.INFO", key);
        let net_total: i64 = m.net.values().sum();
        assert_eq!(
            info["Number of items inserted"], net_total,
            "{what}: {key}: CF.INFO items"
        );
        // A finished compaction pass resets the delete counter (as RedisBloom does).
        let deleted = info["Number of items deleted"];
        assert!(
            (0..=m.deleted).contains(&deleted),
            "{what}: {key}: CF.INFO deletes {deleted}, acked {}",
            m.deleted
        );
    }
}

/// The INFO item counts are at least what the acknowledged replies alone (`acked`, the
/// writer's own model) promise; a delete in flight (a CF.DEL, or a script of many)
/// may have removed as many more as it names.
pub fn assert_counts_cover_acked(
    con: &mut Connection,
    acked: &Model,
    inflight: Option<&Op>,
    what: &str,
) {
    for (key, m) in &acked.bf {
        let n = info_ints(con, "BF.INFO", key)["Number of items inserted"];
        assert!(
            n >= m.inserted,
            "{what}: {key}: BF.INFO items {n} < acked {}",
            m.inserted
        );
    }
    for (key, m) in &acked.cf {
        let n = info_ints(con, "CF.INFO", key)["Number of items inserted"];
        let del_in_flight = inflight
            .filter(|op| op.kind == Kind::CfDel && op.key == *key)
            .map_or(0, |op| op.items.len() as i64);
        let want = m.net.values().sum::<i64>() - del_in_flight;
        assert!(n >= want, "{what}: {key}: CF.INFO items {n} < acked {want}");
    }
}

/// The compaction pass a cuckoo filter is in, from its SCANDUMP header (byte 7 =
/// flags, bit 0 = running; 20 = sub-filter index u32; 56 = next slot u64):
/// `Some((sub-filter, slot))` while one runs.
pub fn compaction(con: &mut Connection, key: &str) -> Option<(u32, u64)> {
    let v = raw(con, &strs(&["CF.SCANDUMP", key, "0"]));
    let h = match &v {
        Value::Array(a) if a.len() == 2 && a[0] == Value::Int(1) => match &a[1] {
            Value::BulkString(h) if h.len() >= 64 => h.clone(),
            _ => panic!("CF.SCANDUMP {key} 0: {}", show(&v)),
        },
        _ => panic!("CF.SCANDUMP {key} 0: {}", show(&v)),
    };
    let u32_at = |i: usize| u32::from_le_bytes(h[i..i + 4].try_into().unwrap());
    let u64_at = |i: usize| u64::from_le_bytes(h[i..i + 8].try_into().unwrap());
    (h[7] & 1 != 0).then(|| (u32_at(20), u64_at(56)))
}

/// Never-added items, as many as the key's members.
pub fn probes(key: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("probe:{key}:{i}").into_bytes())
        .collect()
}

/// Everything a client can ask about the modelled keys.
#[derive(PartialEq, Eq, Debug)]
pub struct Answers {
    pub per_key: BTreeMap<String, Vec<String>>,
    pub digest: String,
    pub dbsize: i64,
    /// Probes that answered 1 (false positives), over all keys.
    pub false_positives: usize,
}

pub fn answers(con: &mut Connection, model: &Model) -> Answers {
    let mut per_key = BTreeMap::new();
    let mut false_positives = 0;
    for (key, m) in &model.bf {
        let p = probes(key, m.items.len());
        let members = multi(con, "BF.MEXISTS", key, &m.items);
        let fp = multi(con, "BF.MEXISTS", key, &p);
        false_positives += fp.iter().filter(|x| **x == 1).count();
        let info = info_ints(con, "BF.INFO", key);
        let digest = digest_values(con, std::slice::from_ref(key));
        per_key.insert(
            key.clone(),
            vec![
                format!("members {members:?}"),
                format!("probes {fp:?}"),
                format!("info {info:?}"),
                format!("digest {digest:?}"),
            ],
        );
    }
    for (key, m) in &model.cf {
        let p = probes(key, m.items.len());
        let members = multi(con, "CF.MEXISTS", key, &m.items);
        let fp = multi(con, "CF.MEXISTS", key, &p);
        false_positives += fp.iter().filter(|x| **x == 1).count();
        let counts = cf_counts(con, key, &m.items);
        let probe_counts = cf_counts(con, key, &p);
        let info = info_ints(con, "CF.INFO", key);
        let digest = digest_values(con, std::slice::from_ref(key));
        per_key.insert(
            key.clone(),
            vec![
                format!("members {members:?}"),
                format!("probes {fp:?}"),
                format!("counts {counts:?}"),
                format!("probe counts {probe_counts:?}"),
                format!("info {info:?}"),
                format!("digest {digest:?}"),
            ],
        );
    }
    Answers {
        per_key,
        digest: db_digest(con),
        dbsize: dbsize(con),
        false_positives,
    }
}

/// The replica answers every membership, count and INFO query exactly like the
/// primary, for members and probes, and holds byte-identical filters. Returns the
/// number of false-positive probes (the same on both).
pub fn assert_same_answers(primary: &Server, replica: &Server, model: &Model, what: &str) -> usize {
    primary.wait_for_offset(replica);
    let a = answers(&mut primary.conn(), model);
    let b = answers(&mut replica.conn(), model);
    for (key, x) in &a.per_key {
        let y = &b.per_key[key];
        for (u, v) in x.iter().zip(y) {
            if u != v {
                let field = u.split(' ').next().unwrap_or_default();
                panic!("{what}: {key}: {field} differ on the replica");
            }
        }
    }
    assert_eq!(a.dbsize, b.dbsize, "{what}: DBSIZE");
    assert_eq!(a.digest, b.digest, "{what}: DEBUG DIGEST");
    assert_eq!(a, b, "{what}");
    a.false_positives
}

pub fn role(s: &Server) -> String {
    s.info_field("replication", "role").unwrap_or_default()
}

/// The replica's link is up and no sync is in progress (offsets may still move).
pub fn wait_link_up(replica: &Server) {
    wait_until(
        Duration::from_secs(30),
        "the replica link to come up",
        || {
            let r = replica.info("replication");
            r.get("master_link_status").map(String::as_str) == Some("up")
                && r.get("master_sync_in_progress").map(String::as_str) == Some("0")
        },
    );
}

pub fn wait_acked(p: &Progress, n: usize, writer: &std::thread::ScopedJoinHandle<'_, Run>) {
    wait_until(
        Duration::from_secs(60),
        "the writer's acknowledgements",
        || p.acked.load(Ordering::SeqCst) >= n || writer.is_finished(),
    );
    assert!(
        !writer.is_finished() || p.acked.load(Ordering::SeqCst) >= n,
        "the writer stopped after {} commands",
        p.acked.load(Ordering::SeqCst)
    );
}
