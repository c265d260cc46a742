//! `cluster_scale_out`: a 3-primary cluster with one replica each, 10,000 small filters and
//! two big ones written through the cluster client, redirects, hash tags, two reshards and
//! the checks after them (see the top of `main.rs`), with its data set and step helpers.

use super::*;

// ---------------------------------------------------------------------------------------------
// The data set
// ---------------------------------------------------------------------------------------------

const SMALL_FILTERS: usize = 5_000; // of each kind
const BIG_BF_CAPACITY: u64 = 8_000_000;
const BIG_BF_ERROR: &str = "0.0001";
const BIG_BF_ITEMS: usize = 2_000_000;
const BIG_CF_CAPACITY: u64 = 1_000_000;
const BIG_CF_ITEMS: usize = 500_000;
/// Slots moved by each reshard.
const RESHARD_SLOTS: usize = 300;

struct Small {
    key: String,
    bloom: bool,
    items: Vec<String>,
}

fn small_filters() -> Vec<Small> {
    let mut v = Vec::with_capacity(2 * SMALL_FILTERS);
    for bloom in [true, false] {
        for i in 0..SMALL_FILTERS {
            let key = format!("{}:{i}", if bloom { "bf" } else { "cf" });
            let items = (0..1 + i % 5).map(|j| format!("{key}/item{j}")).collect();
            v.push(Small { key, bloom, items });
        }
    }
    v
}

/// The commands that create and fill one small filter (each creating command in turn).
fn create_cmds(f: &Small, i: usize) -> Vec<redis::Cmd> {
    let mut v = Vec::new();
    let mut c = |args: &[&str], items: &[String]| {
        let mut c = redis::cmd(args[0]);
        c.arg(&args[1..]).arg(items);
        v.push(c);
    };
    let k = f.key.as_str();
    match (f.bloom, i % 3) {
        (true, 0) => {
            c(&["BF.RESERVE", k, "0.001", "100"], &[]);
            c(&["BF.MADD", k], &f.items);
        }
        (true, 1) => {
            c(&["BF.ADD", k], &f.items[..1]);
            if f.items.len() > 1 {
                c(&["BF.MADD", k], &f.items[1..]);
            }
        }
        (true, _) => c(
            &["BF.INSERT", k, "CAPACITY", "50", "ERROR", "0.01", "ITEMS"],
            &f.items,
        ),
        (false, 0) => {
            c(&["CF.RESERVE", k, "64"], &[]);
            for it in &f.items {
                c(&["CF.ADD", k], std::slice::from_ref(it));
            }
        }
        (false, 1) => c(&["CF.INSERT", k, "ITEMS"], &f.items),
        (false, _) => {
            c(&["CF.INSERTNX", k, "CAPACITY", "32", "ITEMS"], &f.items);
            c(&["CF.ADDNX", k], &f.items[..1]);
        }
    }
    v
}

fn info_cmd(f: &Small) -> redis::Cmd {
    let mut c = redis::cmd(if f.bloom { "BF.INFO" } else { "CF.INFO" });
    c.arg(&f.key);
    c
}

fn big_bf_item(n: usize) -> String {
    format!("big-bloom-item-{n}")
}

fn big_cf_item(n: usize) -> String {
    format!("big-cuckoo-item-{n}")
}

/// Adds items `0..n` to `key` through the cluster client, 1,000 per command.
fn fill_big(cc: &mut ClusterConnection, cmd: &str, key: &str, n: usize, item: fn(usize) -> String) {
    let mut start = 0;
    while start < n {
        let mut p = cluster_pipe();
        for _ in 0..50 {
            if start >= n {
                break;
            }
            let end = (start + 1000).min(n);
            let mut c = redis::cmd(cmd);
            c.arg(key);
            if cmd.ends_with("INSERT") {
                c.arg("NOCREATE").arg("ITEMS");
            }
            for j in start..end {
                c.arg(item(j));
            }
            p.add_command(c);
            start = end;
        }
        let _: Vec<Value> = p.query(cc).unwrap();
    }
}

/// Every item `0..n` of `key` is reported present (`*MEXISTS`) through the cluster client.
fn check_big(
    cc: &mut ClusterConnection,
    cmd: &str,
    key: &str,
    n: usize,
    item: fn(usize) -> String,
) {
    let mut start = 0;
    while start < n {
        let mut p = cluster_pipe();
        let first = start;
        for _ in 0..50 {
            if start >= n {
                break;
            }
            let end = (start + 1000).min(n);
            let mut c = redis::cmd(cmd);
            c.arg(key);
            for j in start..end {
                c.arg(item(j));
            }
            p.add_command(c);
            start = end;
        }
        let v: Vec<Vec<i64>> = p.query(cc).unwrap();
        let missing = v.iter().flatten().filter(|&&x| x != 1).count();
        assert_eq!(
            missing, 0,
            "{key}: {missing} of items {first}..{start} missing"
        );
    }
}

/// The slow-log entries of `node` whose arguments mention `needle`: (command, microseconds).
fn slowlog_with(node: &Node, needle: &str) -> Vec<(String, u64)> {
    let v: Value = redis::cmd("SLOWLOG")
        .arg("GET")
        .arg(1000)
        .query(&mut node.conn())
        .unwrap();
    let Value::Array(entries) = v else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries {
        let Value::Array(f) = e else { continue };
        let (Some(Value::Int(us)), Some(Value::Array(args))) = (f.get(2), f.get(3)) else {
            continue;
        };
        let args: Vec<String> = args
            .iter()
            .filter_map(|a| String::from_redis_value(a.clone()).ok())
            .collect();
        if args.iter().any(|a| a == needle) {
            out.push((args[0].clone(), *us as u64));
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// The cluster test
// ---------------------------------------------------------------------------------------------

#[test]
fn cluster_scale_out() {
    let t0 = Instant::now();
    let c = Cluster::start(3, true);
    println!("cluster of 6 nodes up in {:?}", t0.elapsed());

    redirects(&c);
    hash_tags(&c);
    migration(&c);
    println!("cluster_scale_out total {:?}", t0.elapsed());
}

/// MOVED from a primary that does not own the slot (the module never runs); READONLY
/// replicas serve read commands and redirect write commands.
fn redirects(c: &Cluster) {
    let key = "redirect-probe";
    let slot = c.key_slot(key);
    let owner = c.owner_of(key);
    let owner_port = c.primaries[owner].port();
    let wrong = &c.primaries[(owner + 1) % c.primaries.len()];
    let mut con = wrong.conn();
    let before = command_stats(&mut con);
    for (args, _) in COMMANDS {
        let e = err_text(with_key(args, key).query::<Value>(&mut con));
        assert_eq!(
            e,
            format!("MOVED {slot} 127.0.0.1:{owner_port}"),
            "{args:?}"
        );
    }
    let after = command_stats(&mut con);
    for (args, _) in COMMANDS {
        let name = args[0].to_ascii_lowercase();
        let (calls0, rej0) = before.get(&name).copied().unwrap_or_default();
        let (calls1, rej1) = after.get(&name).copied().unwrap_or_default();
        assert_eq!(
            calls1, calls0,
            "{name} ran on a node that does not own the slot"
        );
        assert_eq!(rej1, rej0 + 1, "{name}: rejected_calls");
    }

    // The owner's replica, in READONLY mode: reads run there (the probe key does not exist,
    // so they answer the module's own error or an empty reply), writes go to the primary.
    let mut rcon = c.replicas[owner].conn();
    let _: () = redis::cmd("READONLY").query(&mut rcon).unwrap();
    let before = command_stats(&mut rcon);
    for (args, write) in COMMANDS {
        let r = with_key(args, key).query::<Value>(&mut rcon);
        if *write {
            assert_eq!(
                err_text(r),
                format!("MOVED {slot} 127.0.0.1:{owner_port}"),
                "{args:?} on a replica"
            );
        } else if let Err(e) = r {
            assert_ne!(
                e.code(),
                Some("MOVED"),
                "{args:?} on a READONLY replica: {e}"
            );
        }
    }
    let after = command_stats(&mut rcon);
    for (args, write) in COMMANDS {
        let name = args[0].to_ascii_lowercase();
        let calls = |m: &HashMap<String, (u64, u64)>| m.get(&name).map_or(0, |v| v.0);
        let ran = calls(&after) - calls(&before);
        assert_eq!(
            ran,
            u64::from(!*write),
            "{name}: calls on the READONLY replica"
        );
    }
    // Without READONLY the replica redirects reads too.
    let mut rcon = c.replicas[owner].conn();
    let e = err_text(exec::<Value>(&mut rcon, &["BF.EXISTS", key, "a"]));
    assert_eq!(e, format!("MOVED {slot} 127.0.0.1:{owner_port}"));
}

/// Filters sharing a hash tag share a slot and node: transactions and COPY across them work;
/// COPY across slots is refused.
fn hash_tags(c: &Cluster) {
    let (bf, cf) = ("{user:42}:bf", "{user:42}:cf");
    let mut cc = c.client();
    assert_eq!(exec_c::<i64>(&mut cc, &["BF.ADD", bf, "alice"]), 1);
    assert_eq!(exec_c::<i64>(&mut cc, &["CF.ADD", cf, "alice"]), 1);
    let slot = c.key_slot(bf);
    assert_eq!(c.key_slot(cf), slot);
    assert_eq!(c.key_slot("user:42"), slot, "the slot is the tag's");
    let node = &c.primaries[c.owner_of(bf)];
    let mut con = node.conn();
    assert_eq!(
        exec::<i64>(&mut con, &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()]).unwrap(),
        2
    );

    // One transaction on the owning node touching both filters.
    let (a, b, c1, d, e, f): (i64, i64, i64, i64, i64, i64) = redis::pipe()
        .atomic()
        .cmd("BF.ADD")
        .arg(bf)
        .arg("bob")
        .cmd("CF.ADD")
        .arg(cf)
        .arg("bob")
        .cmd("BF.EXISTS")
        .arg(bf)
        .arg("bob")
        .cmd("CF.EXISTS")
        .arg(cf)
        .arg("bob")
        .cmd("BF.CARD")
        .arg(bf)
        .cmd("CF.COUNT")
        .arg(cf)
        .arg("alice")
        .query(&mut con)
        .unwrap();
    assert_eq!((a, b, c1, d, e, f), (1, 1, 1, 1, 2, 1));

    // A transaction that also touches another slot never runs: the foreign key is refused
    // while queuing (MOVED, another node's slot) or at EXEC (CROSSSLOT, a slot of this
    // node), and EXEC aborts.
    let r = redis::pipe()
        .atomic()
        .cmd("BF.ADD")
        .arg(bf)
        .arg("carol")
        .cmd("BF.ADD")
        .arg("{user:43}:bf")
        .arg("carol")
        .query::<Value>(&mut con);
    assert!(r.is_err(), "a cross-slot transaction ran: {r:?}");
    assert_eq!(
        exec::<i64>(&mut con, &["BF.EXISTS", bf, "carol"]).unwrap(),
        0
    );

    // COPY within the tag, through the cluster client (routed by the first key).
    for (src, dst) in [(bf, "{user:42}:bf-copy"), (cf, "{user:42}:cf-copy")] {
        assert_eq!(exec_c::<i64>(&mut cc, &["COPY", src, dst]), 1);
        assert_eq!(digest_value(&mut con, src), digest_value(&mut con, dst));
    }
    assert_eq!(
        exec_c::<Vec<i64>>(
            &mut cc,
            &["BF.MEXISTS", "{user:42}:bf-copy", "alice", "bob"]
        ),
        vec![1, 1]
    );
    assert_eq!(
        exec_c::<i64>(&mut cc, &["CF.COUNT", "{user:42}:cf-copy", "bob"]),
        1
    );

    // Across slots: refused before the module or COPY runs, on any node.
    assert_ne!(c.key_slot("{user:43}:bf"), slot);
    for n in &c.primaries {
        let e = exec_err(&mut n.conn(), &["COPY", bf, "{user:43}:bf"]);
        assert_eq!(e, "CROSSSLOT Keys in request don't hash to the same slot");
    }
    let r = redis::cmd("COPY")
        .arg(bf)
        .arg("{user:43}:bf")
        .query::<Value>(&mut cc);
    assert_eq!(
        err_text(r),
        "CROSSSLOT Keys in request don't hash to the same slot",
        "cluster client COPY across slots"
    );
    for n in &c.primaries {
        let s = c.key_slot("{user:43}:bf").to_string();
        assert_eq!(
            exec::<i64>(&mut n.conn(), &["CLUSTER", "COUNTKEYSINSLOT", &s]).unwrap(),
            0
        );
    }
}

fn exec_c<T: FromRedisValue>(cc: &mut ClusterConnection, args: &[&str]) -> T {
    let mut c = redis::cmd(args[0]);
    c.arg(&args[1..]);
    c.query(cc)
        .unwrap_or_else(|e| panic!("{args:?} through the cluster client: {e}"))
}

/// The key whose hash tag lands in one of `slots` (searched with CLUSTER KEYSLOT).
fn tag_in(c: &Cluster, slots: &BTreeSet<u16>) -> String {
    let tags: Vec<String> = (0..20_000).map(|n| format!("{{big{n}}}")).collect();
    let found = c
        .key_slots(&tags)
        .iter()
        .position(|s| slots.contains(s))
        .expect("no tag in the moving slots");
    tags[found].clone()
}

fn migration(c: &Cluster) {
    let mut cc = c.client();
    let smalls = small_filters();
    let mut small_keys: Vec<String> = smalls.iter().map(|f| f.key.clone()).collect();

    // Which slots each reshard will move: redis-cli takes the source's lowest slots.
    let moves1: BTreeSet<u16> = c.slots_of(0).into_iter().take(RESHARD_SLOTS).collect();
    let moves2: BTreeSet<u16> = c.slots_of(2).into_iter().take(RESHARD_SLOTS).collect();

    // --- write ---
    let t = Instant::now();
    let cmds: Vec<redis::Cmd> = smalls
        .iter()
        .enumerate()
        .flat_map(|(i, f)| create_cmds(f, i))
        .collect();
    let (replies, _) = run_all(&mut cc, &cmds, false);
    for (cmd, r) in cmds.iter().zip(replies) {
        assert!(
            value_err_text(&r).is_none(),
            "{:?}: {r:?}",
            String::from_utf8_lossy(&cmd.get_packed_command())
        );
    }
    println!(
        "{} small filters written ({} commands) through the cluster client in {:?}",
        smalls.len(),
        cmds.len(),
        t.elapsed()
    );

    let tag = tag_in(c, &moves1);
    let big_bf = format!("big:{tag}:bf");
    let big_cf = format!("big:{tag}:cf");
    let big_slot = c.key_slot(&big_bf);
    assert_eq!(c.key_slot(&big_cf), big_slot);
    let t = Instant::now();
    exec_c::<()>(
        &mut cc,
        &[
            "BF.RESERVE",
            &big_bf,
            BIG_BF_ERROR,
            &BIG_BF_CAPACITY.to_string(),
            "NONSCALING",
        ],
    );
    fill_big(&mut cc, "BF.MADD", &big_bf, BIG_BF_ITEMS, big_bf_item);
    exec_c::<()>(
        &mut cc,
        &["CF.RESERVE", &big_cf, &BIG_CF_CAPACITY.to_string()],
    );
    fill_big(&mut cc, "CF.INSERT", &big_cf, BIG_CF_ITEMS, big_cf_item);
    println!(
        "big filters {big_bf} ({BIG_BF_ITEMS} items) and {big_cf} ({BIG_CF_ITEMS} items) \
         filled in {:?}",
        t.elapsed()
    );
    let dump_len = |cc: &mut ClusterConnection, key: &str| {
        let mut c = redis::cmd("DUMP");
        c.arg(key);
        c.query::<Vec<u8>>(cc).unwrap().len()
    };
    let bf_dump = dump_len(&mut cc, &big_bf);
    let cf_dump = dump_len(&mut cc, &big_cf);
    println!("DUMP payloads: {big_bf} {bf_dump} bytes, {big_cf} {cf_dump} bytes");
    assert!(
        bf_dump > 16 << 20,
        "the big Bloom filter's DUMP payload is only {bf_dump} bytes"
    );

    // --- state before ---
    small_keys.extend(
        [
            "{user:42}:bf",
            "{user:42}:cf",
            "{user:42}:bf-copy",
            "{user:42}:cf-copy",
        ]
        .map(String::from),
    );
    let mut all_keys = small_keys.clone();
    all_keys.push(big_bf.clone());
    all_keys.push(big_cf.clone());
    let slots_before = c.key_slots(&all_keys);
    let digests_before = digests(c, &all_keys);
    let sizes_before = dbsizes(c);
    assert_eq!(sizes_before.iter().sum::<usize>(), all_keys.len());
    let info_cmds: Vec<redis::Cmd> = smalls.iter().map(info_cmd).collect();
    let (infos_before, _) = run_all(&mut cc, &info_cmds, true);
    let big_infos = |cc: &mut ClusterConnection| -> (Value, Value, i64) {
        (
            exec_c(cc, &["BF.INFO", &big_bf]),
            exec_c(cc, &["CF.INFO", &big_cf]),
            exec_c(cc, &["BF.CARD", &big_bf]),
        )
    };
    let big_before = big_infos(&mut cc);
    let countkeys = |n: &Node| {
        exec::<i64>(
            &mut n.conn(),
            &["CLUSTER", "COUNTKEYSINSLOT", &big_slot.to_string()],
        )
        .unwrap()
    };
    assert_eq!(countkeys(&c.primaries[0]), 2);
    assert_eq!(countkeys(&c.primaries[1]), 0);

    // --- reshard 1: primaries[0] -> primaries[1], with the big filters ---
    for n in [&c.primaries[0], &c.primaries[1]] {
        let mut con = n.conn();
        exec::<()>(
            &mut con,
            &["CONFIG", "SET", "slowlog-log-slower-than", "1000"],
        )
        .unwrap();
        exec::<()>(&mut con, &["SLOWLOG", "RESET"]).unwrap();
    }
    // Worst PING latency on the source while it migrates.
    let stop = Arc::new(AtomicBool::new(false));
    let pinger = {
        let stop = stop.clone();
        let mut con = c.primaries[0].conn();
        std::thread::spawn(move || {
            let mut worst = Duration::ZERO;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                let _: String = redis::cmd("PING").query(&mut con).unwrap();
                worst = worst.max(t.elapsed());
                std::thread::sleep(Duration::from_millis(1));
            }
            worst
        })
    };
    let (_, took1) = c.reshard(0, 1, RESHARD_SLOTS);
    stop.store(true, Ordering::Relaxed);
    let worst_ping = pinger.join().unwrap();
    let migrate = slowlog_with(&c.primaries[0], &big_bf);
    let restore = slowlog_with(&c.primaries[1], &big_bf);
    println!(
        "reshard 1 ({RESHARD_SLOTS} slots, incl. the big filters) took {took1:?}; slowlog on \
         the source: {migrate:?}; on the target: {restore:?}; worst PING on the source \
         during the reshard: {worst_ping:?}"
    );

    // --- reshard 2: primaries[2] -> primaries[0] ---
    let (_, took2) = c.reshard(2, 0, RESHARD_SLOTS);
    println!("reshard 2 ({RESHARD_SLOTS} slots) took {took2:?}");

    // --- where everything is now ---
    let owners = c.slot_owners();
    for s in &moves1 {
        assert_eq!(owners[*s as usize], 1, "slot {s} (reshard 1)");
    }
    for s in &moves2 {
        assert_eq!(owners[*s as usize], 0, "slot {s} (reshard 2)");
    }
    assert_eq!(countkeys(&c.primaries[0]), 0, "big filters left the source");
    assert_eq!(countkeys(&c.primaries[1]), 2, "big filters on the target");
    let e = exec_err(&mut c.primaries[0].conn(), &["BF.EXISTS", &big_bf, "x"]);
    assert_eq!(
        e,
        format!("MOVED {big_slot} {}", c.primaries[1].addr()),
        "the old owner redirects"
    );

    let digests_after = digests(c, &all_keys);
    let mut moved = [0usize; 2];
    for (k, s) in all_keys.iter().zip(&slots_before) {
        let (owner0, d0) = &digests_before[k];
        let (owner1, d1) = &digests_after[k];
        assert_eq!(d0, d1, "{k}: DEBUG DIGEST-VALUE changed by the move");
        let expected = if moves1.contains(s) {
            moved[0] += 1;
            1
        } else if moves2.contains(s) {
            moved[1] += 1;
            0
        } else {
            *owner0
        };
        assert_eq!(*owner1, expected, "{k} (slot {s}) is on the wrong primary");
        assert_eq!(owners[*s as usize], *owner1, "{k}: CLUSTER SLOTS vs data");
    }
    println!(
        "keys moved: {} by reshard 1, {} by reshard 2",
        moved[0], moved[1]
    );
    assert!(
        moved[0] > 50 && moved[1] > 50,
        "too few keys moved: {moved:?}"
    );
    let sizes_after = dbsizes(c);
    assert_eq!(
        sizes_after,
        vec![
            sizes_before[0] - moved[0] + moved[1],
            sizes_before[1] + moved[0],
            sizes_before[2] - moved[1],
        ]
    );

    // --- every item of every filter, through the cluster client (it follows MOVED) ---
    let t = Instant::now();
    let (infos_after, redirected) = run_all(&mut cc, &info_cmds, true);
    println!(
        "cluster client: {redirected} commands of the first pipelines after the reshards met MOVED"
    );
    for ((f, a), b) in smalls.iter().zip(&infos_before).zip(&infos_after) {
        assert_eq!(a, b, "{}: INFO changed", f.key);
    }
    let exists: Vec<redis::Cmd> = smalls
        .iter()
        .map(|f| {
            let mut c = redis::cmd(if f.bloom { "BF.MEXISTS" } else { "CF.MEXISTS" });
            c.arg(&f.key).arg(&f.items);
            c
        })
        .collect();
    let (replies, _) = run_all(&mut cc, &exists, true);
    for (f, r) in smalls.iter().zip(replies) {
        let r = Vec::<i64>::from_redis_value(r).unwrap();
        assert_eq!(r, vec![1; f.items.len()], "{}: items lost", f.key);
    }
    check_big(&mut cc, "BF.MEXISTS", &big_bf, BIG_BF_ITEMS, big_bf_item);
    check_big(&mut cc, "CF.MEXISTS", &big_cf, BIG_CF_ITEMS, big_cf_item);
    assert_eq!(big_infos(&mut cc), big_before);
    assert_eq!(
        big_before.2, BIG_BF_ITEMS as i64,
        "BF.CARD of the big filter"
    );
    println!("every item re-checked in {:?}", t.elapsed());

    // The moved filters take writes on their new node.
    assert_eq!(
        exec_c::<i64>(&mut cc, &["BF.ADD", &big_bf, "after-the-move"]),
        1
    );
    assert_eq!(
        exec_c::<i64>(&mut cc, &["CF.ADD", &big_cf, "after-the-move"]),
        1
    );
    for (f, s) in smalls.iter().zip(&slots_before) {
        if !moves2.contains(s) {
            continue;
        }
        let (add, exists) = if f.bloom {
            ("BF.ADD", "BF.EXISTS")
        } else {
            ("CF.ADD", "CF.EXISTS")
        };
        assert_eq!(exec_c::<i64>(&mut cc, &[add, &f.key, "after-the-move"]), 1);
        assert_eq!(
            exec_c::<i64>(&mut cc, &[exists, &f.key, "after-the-move"]),
            1
        );
    }

    // --- replicas follow their primaries ---
    for (p, r) in c.primaries.iter().zip(&c.replicas) {
        p.server.wait_for_offset(&r.server);
        assert_eq!(
            p.server.digest(),
            r.server.digest(),
            "replica of {}",
            p.addr()
        );
    }
    let mut rcon = c.replicas[1].conn();
    assert_ne!(digest_value(&mut rcon, &big_bf), ZERO_DIGEST);
    let mut rcon = c.replicas[0].conn();
    assert_eq!(
        digest_value(&mut rcon, &big_bf),
        ZERO_DIGEST,
        "the old replica dropped it"
    );
}
