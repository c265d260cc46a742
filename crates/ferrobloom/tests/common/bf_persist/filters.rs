//! The filter set every Bloom round trip carries (`build_filters`, `more_writes`) and its
//! checks: snapshots, restored filters, same filter on two keys or servers, replicas.

use super::*;

// ---------------------------------------------------------------------------------------------
// The filter set and its checks
// ---------------------------------------------------------------------------------------------

pub fn text_items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}{i}").into_bytes())
        .collect()
}

/// Every single byte value, the empty string, a 1 KiB item, all 256 byte values in
/// one item, and items that look like RESP framing.
pub fn binary_items() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    v.push(Vec::new());
    v.push((0..1024u32).map(|i| (i * 31 + 7) as u8).collect());
    v.push((0..=255u8).collect());
    v.push(b"\r\n$-1\r\n*3\r\n".to_vec());
    v.push(b"\x00\x00\x00\x00".to_vec());
    v
}

/// Items never inserted anywhere: their answers pin the bits (false positives included).
pub fn probes() -> Vec<Vec<u8>> {
    let mut v = text_items("probe:", 1500);
    v.extend(binary_probes());
    v
}

#[derive(Clone, Debug)]
pub struct Filter {
    pub key: Vec<u8>,
    pub items: Vec<Vec<u8>>,
}

#[derive(Clone, Debug, Default)]
pub struct Filters {
    pub list: Vec<Filter>,
}

impl Filters {
    pub fn push(&mut self, key: &[u8], items: Vec<Vec<u8>>) {
        assert!(self.list.iter().all(|f| f.key != key), "duplicate key");
        self.list.push(Filter {
            key: key.to_vec(),
            items,
        });
    }

    pub fn get_mut(&mut self, key: &[u8]) -> &mut Filter {
        self.list
            .iter_mut()
            .find(|f| f.key == key)
            .unwrap_or_else(|| panic!("no filter {:?}", String::from_utf8_lossy(key)))
    }
}

pub const SCALING: &[u8] = b"fs:scaling";
pub const NONSCALING: &[u8] = b"fs:nonscaling";
pub const AUTO: &[u8] = b"fs:auto";
pub const EXP1: &[u8] = b"fs:exp1";
pub const INSERTED: &[u8] = b"fs:insert";
pub const EMPTY: &[u8] = b"fs:empty";
pub const BINKEY: &[u8] = b"fs:bin\x00\xff\r\n key";
pub const BIG: &[u8] = b"fs:big";
pub const BLOCKED: &[u8] = b"fs:blocked";
pub const BLOCKED_NS: &[u8] = b"fs:blocked-ns";
pub const PAIRED: &[u8] = b"fs:paired";
pub const TIGHT: &[u8] = b"fs:tight";
pub const SEEDED: &[u8] = b"fs:seeded";
/// valkey-bloom's 32-byte SEED, with bytes that are not text.
pub const SEED: &[u8; 32] = b"\x00\xff\r\n seed of thirty-two bytes\x01\x02\x03";

/// Creates the standard filter set; `big` adds a ~27.6 MB single-link filter (two
/// 16 MiB chunks).
pub fn build_filters(con: &mut Connection, big: bool) -> Filters {
    let mut fs = Filters::default();

    // Scaling, 5 links (100 + 200 + 400 + 800 + 1600).
    reserve(con, SCALING, &["0.01", "100"]);
    let mut items = text_items("scaling:", 2000);
    items.extend(binary_items());
    madd(con, SCALING, &items);
    fs.push(SCALING, items);

    // Non-scaling.
    reserve(con, NONSCALING, &["0.001", "500", "NONSCALING"]);
    let mut items = text_items("nonscaling:", 200);
    items.extend(binary_items());
    madd(con, NONSCALING, &items);
    fs.push(NONSCALING, items);

    // Auto-created by BF.ADD on a missing key (defaults: 100 items, 0.01, expansion 2).
    assert_eq!(q::<i64>(con, &[b"BF.ADD", AUTO, b"first"]), 1);
    let mut items = vec![b"first".to_vec()];
    let more = text_items("auto:", 149);
    madd(con, AUTO, &more);
    items.extend(more);
    fs.push(AUTO, items);

    // EXPANSION 1: every link has the same capacity; 6 links.
    reserve(con, EXP1, &["0.05", "50", "EXPANSION", "1"]);
    let items = text_items("exp1:", 300);
    madd(con, EXP1, &items);
    fs.push(EXP1, items);

    // Created by BF.INSERT with every option.
    let items = text_items("insert:", 200);
    let r = insert(
        con,
        INSERTED,
        &["CAPACITY", "60", "ERROR", "0.02", "EXPANSION", "3"],
        &items,
    );
    assert_eq!(r.len(), items.len());
    fs.push(INSERTED, items);

    // Empty.
    reserve(con, EMPTY, &["0.01", "1000"]);
    fs.push(EMPTY, Vec::new());

    // Binary key name, non-scaling, binary items.
    let items = binary_items();
    insert(con, BINKEY, &["CAPACITY", "1000", "NONSCALING"], &items);
    fs.push(BINKEY, items);

    if big {
        reserve(con, BIG, &["0.01", "20000000"]);
        let mut items = text_items("big:", 1000);
        items.extend(binary_items());
        madd(con, BIG, &items);
        fs.push(BIG, items);
        let lb = link_bytes(con, BIG);
        assert_eq!(lb.len(), 1);
        assert!(lb[0] > CHUNK && lb[0] <= 2 * CHUNK, "big filter: {lb:?}");
    }

    // The blocked layout: scaling (5 links) and non-scaling via BF.INSERT.
    reserve(con, BLOCKED, &["0.01", "100", "LAYOUT", "blocked"]);
    let mut items = text_items("blocked:", 2000);
    items.extend(binary_items());
    madd(con, BLOCKED, &items);
    fs.push(BLOCKED, items);
    let items = text_items("blocked-ns:", 300);
    insert(
        con,
        BLOCKED_NS,
        &[
            "CAPACITY",
            "400",
            "ERROR",
            "0.001",
            "NONSCALING",
            "LAYOUT",
            "blocked",
        ],
        &items,
    );
    fs.push(BLOCKED_NS, items);
    // The paired layout (windowed filters' default), scaling to 5 links.
    reserve(con, PAIRED, &["0.01", "100", "LAYOUT", "paired"]);
    let mut items = text_items("paired:", 2000);
    items.extend(binary_items());
    madd(con, PAIRED, &items);
    fs.push(PAIRED, items);

    // valkey-bloom's options (Bloom header version 2): a tightening ratio and a
    // binary seed, scaling to 4 links; a seeded blocked filter with the default ratio.
    let items = text_items("tight:", 1500);
    let mut args: Vec<&[u8]> = vec![
        b"BF.INSERT",
        TIGHT,
        b"CAPACITY",
        b"100",
        b"TIGHTENING",
        b"0.8",
        b"SEED",
        SEED,
        b"ITEMS",
    ];
    args.extend(items.iter().map(|i| i.as_slice()));
    assert_eq!(q_array(con, &args).len(), items.len());
    fs.push(TIGHT, items);
    ok(
        con,
        &[
            b"BF.RESERVE",
            SEEDED,
            b"0.001",
            b"100",
            b"LAYOUT",
            b"blocked",
            b"SEED",
            SEED,
        ],
    );
    let mut items = text_items("seeded:", 1000);
    items.extend(binary_items());
    madd(con, SEEDED, &items);
    fs.push(SEEDED, items);

    // The set has the shapes this file claims.
    assert!(link_bytes(con, SCALING).len() >= 5);
    assert!(link_bytes(con, EXP1).len() >= 5);
    assert!(link_bytes(con, AUTO).len() >= 2);
    assert!(link_bytes(con, INSERTED).len() >= 2);
    assert!(link_bytes(con, BLOCKED).len() >= 5);
    assert!(link_bytes(con, PAIRED).len() >= 5);
    for (key, layout) in [
        (BLOCKED, " layout:blocked"),
        (BLOCKED_NS, " layout:blocked"),
        (PAIRED, " layout:paired"),
    ] {
        let debug = bf_debug(con, key);
        assert!(debug[1..].iter().all(|l| l.ends_with(layout)), "{debug:?}");
    }
    assert!(!bf_debug(con, SCALING)[1].contains("layout"));
    assert!(link_bytes(con, TIGHT).len() >= 4);
    assert!(link_bytes(con, SEEDED).len() >= 4);
    let tightening: f64 = redis::from_redis_value(bf_info_field(con, TIGHT, "TIGHTENING")).unwrap();
    assert_eq!(tightening, 0.8);
    assert_eq!(bf_info_field(con, NONSCALING, "EXPANSION"), Value::Nil);
    assert_eq!(bf_info_field(con, EXP1, "EXPANSION"), Value::Int(1));
    assert_eq!(bf_info_field(con, INSERTED, "EXPANSION"), Value::Int(3));
    fs
}

/// Everything observable about one filter.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyState {
    pub info: Value,
    pub card: i64,
    pub debug: Vec<String>,
    pub digest: String,
    pub probes: Vec<i64>,
}

/// Panics with the fields that differ (probe answers summarised) unless `a == b`.
pub fn assert_state_eq(a: &KeyState, b: &KeyState, what: &str) {
    if a == b {
        return;
    }
    let mut diff = Vec::new();
    if a.info != b.info {
        diff.push(format!("BF.INFO {:?} vs {:?}", a.info, b.info));
    }
    if a.card != b.card {
        diff.push(format!("BF.CARD {} vs {}", a.card, b.card));
    }
    if a.debug != b.debug {
        diff.push(format!("BF.DEBUG {:?} vs {:?}", a.debug, b.debug));
    }
    if a.digest != b.digest {
        diff.push(format!("DIGEST-VALUE {} vs {}", a.digest, b.digest));
    }
    if a.probes != b.probes {
        let n = a
            .probes
            .iter()
            .zip(&b.probes)
            .filter(|(x, y)| x != y)
            .count();
        diff.push(format!(
            "{n} of {} probe answers differ ({} vs {} positives)",
            a.probes.len(),
            a.probes.iter().sum::<i64>(),
            b.probes.iter().sum::<i64>()
        ));
    }
    panic!("{what}:\n  {}", diff.join("\n  "));
}

pub fn key_state(con: &mut Connection, key: &[u8]) -> KeyState {
    KeyState {
        info: bf_info(con, key),
        card: card(con, key),
        debug: bf_debug(con, key),
        digest: digest_value(con, key),
        probes: mexists(con, key, &probes()),
    }
}

/// Every inserted item answers 1.
pub fn assert_members(con: &mut Connection, key: &[u8], items: &[Vec<u8>], what: &str) {
    let r = mexists(con, key, items);
    if let Some(i) = r.iter().position(|v| *v != 1) {
        panic!(
            "{what}: {:?} lost item #{i} {:?} ({} of {} missing)",
            String::from_utf8_lossy(key),
            String::from_utf8_lossy(&items[i]),
            r.iter().filter(|v| **v != 1).count(),
            items.len()
        );
    }
}

#[derive(Clone, Debug)]
pub struct Snapshot {
    pub states: Vec<(Vec<u8>, KeyState)>,
}

pub fn snapshot(con: &mut Connection, fs: &Filters) -> Snapshot {
    let states = fs
        .list
        .iter()
        .map(|f| (f.key.clone(), key_state(con, &f.key)))
        .collect();
    Snapshot { states }
}

/// Every filter of `fs` has every item and exactly its snapshot state.
pub fn assert_restored(con: &mut Connection, fs: &Filters, snap: &Snapshot, what: &str) {
    assert_eq!(fs.list.len(), snap.states.len());
    for (f, (key, before)) in fs.list.iter().zip(&snap.states) {
        assert_eq!(&f.key, key);
        assert!(
            exists(con, key),
            "{what}: {:?} is gone",
            String::from_utf8_lossy(key)
        );
        assert_members(con, key, &f.items, what);
        let after = key_state(con, key);
        let label = format!("{what}: {:?} changed", String::from_utf8_lossy(key));
        assert_state_eq(before, &after, &label);
    }
}

/// `dst` (possibly on another connection/server) holds the same filter as `src`.
pub fn assert_same_filter(
    src_con: &mut Connection,
    src: &[u8],
    dst_con: &mut Connection,
    dst: &[u8],
    items: &[Vec<u8>],
    what: &str,
) {
    assert_members(dst_con, dst, items, what);
    let a = key_state(src_con, src);
    let b = key_state(dst_con, dst);
    let label = format!(
        "{what}: {:?} differs from {:?}",
        String::from_utf8_lossy(dst),
        String::from_utf8_lossy(src)
    );
    assert_state_eq(&a, &b, &label);
}

/// `dst` holds the same filter as `src`, on the same connection.
pub fn assert_same_key(
    con: &mut Connection,
    src: &[u8],
    dst: &[u8],
    items: &[Vec<u8>],
    what: &str,
) {
    assert_members(con, dst, items, what);
    let a = key_state(con, src);
    let b = key_state(con, dst);
    let label = format!(
        "{what}: {:?} differs from {:?}",
        String::from_utf8_lossy(dst),
        String::from_utf8_lossy(src)
    );
    assert_state_eq(&a, &b, &label);
}

/// Writes after a first round trip: more items everywhere (new links), new filters.
pub fn more_writes(con: &mut Connection, fs: &mut Filters, tag: &str) {
    let items = text_items(&format!("{tag}:scaling-more:"), 1500);
    madd(con, SCALING, &items);
    fs.get_mut(SCALING).items.extend(items);

    let items = text_items(&format!("{tag}:exp1-more:"), 60);
    madd(con, EXP1, &items);
    fs.get_mut(EXP1).items.extend(items);

    let items = text_items(&format!("{tag}:empty-now-used:"), 10);
    madd(con, EMPTY, &items);
    fs.get_mut(EMPTY).items.extend(items);

    let key = format!("{tag}:auto").into_bytes();
    assert_eq!(q::<i64>(con, &[b"BF.ADD", &key, b"x"]), 1);
    fs.push(&key, vec![b"x".to_vec()]);

    let key = format!("{tag}:reserved").into_bytes();
    reserve(con, &key, &["0.001", "30", "EXPANSION", "5"]);
    let items = text_items("r:", 100);
    madd(con, &key, &items);
    fs.push(&key, items);

    let key = format!("{tag}:inserted").into_bytes();
    let items = binary_items();
    insert(
        con,
        &key,
        &["ERROR", "0.1", "NONSCALING", "CAPACITY", "400"],
        &items,
    );
    fs.push(&key, items);

    // A filter loaded with SCANDUMP/LOADCHUNK.
    let key = format!("{tag}:loaded").into_bytes();
    let chunks = scandump(con, AUTO);
    loadchunks(con, &key, &chunks);
    let items = fs.get_mut(AUTO).items.clone();
    fs.push(&key, items);
}

/// Every key of `keys` is the same filter on both servers, and the datasets are equal.
pub fn assert_replica_matches(primary: &Server, replica: &Server, fs: &Filters, what: &str) {
    primary.wait_for_offset(replica);
    let mut p = primary.conn();
    let mut r = replica.conn();
    for f in &fs.list {
        assert_same_filter(&mut p, &f.key, &mut r, &f.key, &f.items, what);
    }
    assert_eq!(
        q::<i64>(&mut p, &[b"DBSIZE"]),
        q::<i64>(&mut r, &[b"DBSIZE"]),
        "{what}: DBSIZE"
    );
    assert_eq!(primary.digest(), replica.digest(), "{what}: DEBUG DIGEST");
}
