//! Shared by the migration tests (`crates/ferrobloom/tests/migration.rs`, live beside the real
//! RedisBloom 2.8.2; `crates/ferrobloom/tests/migration_fixtures.rs`, against RedisBloom's committed
//! answers): the matrix of filters, the paths' helpers, the hand-built payloads of
//! RedisBloom's old encoding versions, and the comparable answers about a filter.

use std::path::PathBuf;

use redis::{Connection, Value};

use super::rdb::*;
use super::*;

// ---------------------------------------------------------------------------------------------
// Servers
// ---------------------------------------------------------------------------------------------

pub fn redisbloom_so() -> Option<PathBuf> {
    let p = peer_path("redisbloom");
    if p.is_none() {
        eprintln!(
            "SKIP: RedisBloom 2.8.2 not found; run `make peers` (scripts/peers.sh) to fetch it"
        );
    }
    p
}

/// RedisBloom on Debian's redis-server 7.0 (the server it was built for), whatever
/// server `REDIS_SERVER` makes the suite test ferrobloom on.
pub fn start_redisbloom(so: &PathBuf) -> Server {
    Server::builder()
        .module_path(so)
        .server_bin("redis-server")
        .start()
}

/// RedisBloom with `cases` built in it, beside an empty ferrobloom server; `None`
/// (after the skip message) when RedisBloom is not available.
pub fn side_by_side(cases: &[Case]) -> Option<(Server, Server)> {
    let so = redisbloom_so()?;
    let rbs = start_redisbloom(&so);
    build(&mut rbs.conn(), cases);
    Some((rbs, start_ferrobloom()))
}

/// ferrobloom with RedisBloom's unbounded link count (the matrix grows 40-link chains).
pub fn ferrobloom_builder() -> ServerBuilder {
    Server::builder().args(&["--bf.bf-max-links", "1024"])
}

pub fn start_ferrobloom() -> Server {
    ferrobloom_builder().start()
}

// ---------------------------------------------------------------------------------------------
// Commands and replies
// ---------------------------------------------------------------------------------------------

pub type Cmd = Vec<Vec<u8>>;

pub fn cmd(parts: &[&str]) -> Cmd {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

pub fn with_items(parts: &[&str], items: impl IntoIterator<Item = String>) -> Cmd {
    let mut c = cmd(parts);
    c.extend(items.into_iter().map(String::into_bytes));
    c
}

pub fn items(prefix: &str, n: usize) -> impl Iterator<Item = String> + '_ {
    (0..n).map(move |i| format!("{prefix}{i}"))
}

/// The reply as comparable text (errors included).
pub fn reply(con: &mut Connection, c: &Cmd) -> String {
    let mut rc = redis::cmd(std::str::from_utf8(&c[0]).unwrap());
    for a in &c[1..] {
        rc.arg(a.as_slice());
    }
    match rc.query::<Value>(con) {
        Ok(v) => format!("{v:?}"),
        Err(e) => format!("error: {}", err_text::<()>(Err(e))),
    }
}

/// Runs `c` on both servers and requires the same reply.
pub fn both(rb: &mut Connection, fb: &mut Connection, c: &Cmd) {
    let want = reply(rb, c);
    let got = reply(fb, c);
    assert_eq!(
        got,
        want,
        "reply to {:?}",
        c.iter()
            .take(4)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
    );
}

/// The whole SCANDUMP stream of a key: (iterator, bytes) pairs.
pub fn scandump(con: &mut Connection, kind: Kind, key: &str) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut it = 0i64;
    loop {
        let (next, data): (i64, Option<Vec<u8>>) = redis::cmd(&kind.prefix("SCANDUMP"))
            .arg(key)
            .arg(it)
            .query(con)
            .unwrap_or_else(|e| panic!("SCANDUMP {key} {it}: {e}"));
        if next == 0 {
            return out;
        }
        out.push((next, data.unwrap_or_default()));
        it = next;
    }
}

pub fn loadchunks(con: &mut Connection, kind: Kind, key: &str, chunks: &[(i64, Vec<u8>)]) {
    for (it, data) in chunks {
        let r: redis::RedisResult<Value> = redis::cmd(&kind.prefix("LOADCHUNK"))
            .arg(key)
            .arg(*it)
            .arg(data.as_slice())
            .query(con);
        assert!(r.is_ok(), "LOADCHUNK {key} {it}: {r:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// The matrix
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bloom,
    Cuckoo,
}

impl Kind {
    pub fn prefix(self, cmd: &str) -> String {
        match self {
            Kind::Bloom => format!("BF.{cmd}"),
            Kind::Cuckoo => format!("CF.{cmd}"),
        }
    }
}

pub struct Case {
    pub key: String,
    pub kind: Kind,
    /// A hand-built payload RESTOREd first (RedisBloom's old encoding versions).
    pub payload: Option<Vec<u8>>,
    /// Builds the filter (run on RedisBloom only).
    pub setup: Vec<Cmd>,
    /// Further writes, run on both servers after the move, replies compared.
    pub more: Vec<Cmd>,
}

impl Case {
    /// A case for a key that already exists on both servers.
    pub fn existing(key: &str, kind: Kind, more: Vec<Cmd>) -> Case {
        Case {
            key: key.into(),
            kind,
            payload: None,
            setup: Vec::new(),
            more,
        }
    }
}

pub fn bloom_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut case = |key: &str, create: Option<Cmd>, n: usize| {
        let mut setup: Vec<Cmd> = create.into_iter().collect();
        setup.push(with_items(&["BF.MADD", key], items("i", n)));
        let more = vec![
            with_items(&["BF.MADD", key], items("j", n)),
            cmd(&["BF.ADD", key, "i0"]),
            with_items(&["BF.INSERT", key, "NOCREATE", "ITEMS"], items("k", 50)),
        ];
        v.push(Case {
            key: key.into(),
            kind: Kind::Bloom,
            payload: None,
            setup,
            more,
        });
    };
    case("bf:auto", None, 400);
    for e in ["0.1", "0.01", "0.001", "0.0001"] {
        let key = format!("bf:e{e}");
        case(&key, Some(cmd(&["BF.RESERVE", &key, e, "150"])), 300);
    }
    for x in ["1", "2", "4"] {
        let key = format!("bf:x{x}");
        case(
            &key,
            Some(cmd(&["BF.RESERVE", &key, "0.01", "20", "EXPANSION", x])),
            200,
        );
    }
    case(
        "bf:nonscaling",
        Some(cmd(&[
            "BF.RESERVE",
            "bf:nonscaling",
            "0.01",
            "100",
            "NONSCALING",
        ])),
        120,
    );
    // A tiny capacity that grew dozens of links.
    case(
        "bf:tiny",
        Some(cmd(&[
            "BF.RESERVE",
            "bf:tiny",
            "0.05",
            "1",
            "EXPANSION",
            "1",
        ])),
        40,
    );
    case(
        "bf:insert",
        Some(with_items(
            &[
                "BF.INSERT",
                "bf:insert",
                "CAPACITY",
                "50",
                "ERROR",
                "0.02",
                "EXPANSION",
                "3",
                "ITEMS",
            ],
            items("x", 3),
        )),
        100,
    );
    v
}

pub fn cuckoo_cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut case = |key: &str, create: Option<Cmd>, n: usize, extra: Vec<Cmd>| {
        let mut setup: Vec<Cmd> = create.into_iter().collect();
        setup.push(with_items(&["CF.INSERT", key, "ITEMS"], items("i", n)));
        setup.push(with_items(&["CF.INSERT", key, "ITEMS"], items("i", n / 10)));
        setup.extend(extra);
        let mut more = vec![
            with_items(&["CF.INSERT", key, "ITEMS"], items("j", n)),
            with_items(&["CF.INSERTNX", key, "ITEMS"], items("i", 20)),
            cmd(&["CF.ADDNX", key, "new-item"]),
        ];
        // Enough deletes to start RedisBloom's automatic compaction.
        more.extend(items("j", n / 2).map(|i| cmd(&["CF.DEL", key, &i])));
        more.push(cmd(&["CF.COMPACT", key]));
        more.extend(items("i", 10).map(|i| cmd(&["CF.COUNT", key, &i])));
        v.push(Case {
            key: key.into(),
            kind: Kind::Cuckoo,
            payload: None,
            setup,
            more,
        });
    };
    case("cf:auto", None, 300, Vec::new());
    for bs in ["1", "2", "3", "4", "8"] {
        let key = format!("cf:b{bs}");
        case(
            &key,
            Some(cmd(&["CF.RESERVE", &key, "64", "BUCKETSIZE", bs])),
            200,
            Vec::new(),
        );
    }
    for x in ["0", "1", "2"] {
        let key = format!("cf:x{x}");
        case(
            &key,
            Some(cmd(&["CF.RESERVE", &key, "100", "EXPANSION", x])),
            300,
            Vec::new(),
        );
    }
    case(
        "cf:mi",
        Some(cmd(&["CF.RESERVE", "cf:mi", "100", "MAXITERATIONS", "3"])),
        300,
        Vec::new(),
    );
    // Deletes before the move: the deletes counter and a compaction travel too.
    case(
        "cf:deleted",
        Some(cmd(&["CF.RESERVE", "cf:deleted", "64"])),
        200,
        items("i", 15)
            .map(|i| cmd(&["CF.DEL", "cf:deleted", &i]))
            .collect(),
    );
    // Compacted before the move.
    case(
        "cf:compacted",
        Some(cmd(&["CF.RESERVE", "cf:compacted", "32", "EXPANSION", "2"])),
        200,
        items("i", 60)
            .map(|i| cmd(&["CF.DEL", "cf:compacted", &i]))
            .chain([cmd(&["CF.COMPACT", "cf:compacted"])])
            .collect(),
    );
    // RedisBloom's per-command expansion limit: `CF.RESERVE cf 4` takes 124 adds.
    let mut small = Case {
        key: "cf:small".into(),
        kind: Kind::Cuckoo,
        payload: None,
        setup: vec![
            cmd(&["CF.RESERVE", "cf:small", "4"]),
            cmd(&["CF.ADD", "cf:small", "s"]),
        ],
        more: Vec::new(),
    };
    small.more = (0..130)
        .map(|i| cmd(&["CF.ADD", "cf:small", &i.to_string()]))
        .collect();
    v.push(small);
    v
}

pub fn all_cases() -> Vec<Case> {
    let mut v = bloom_cases();
    v.extend(cuckoo_cases());
    v
}

pub fn build(rb: &mut Connection, cases: &[Case]) {
    for c in cases {
        if let Some(p) = &c.payload {
            restore(rb, &c.key, p);
        }
        for s in &c.setup {
            // Errors are part of some cases (a full non-scaling filter).
            reply(rb, s);
        }
    }
}

/// Every read-only answer about `key` (named `fkey` on ferrobloom), compared
/// (see [`answers`]), and MEMORY USAGE.
pub fn compare_key(rb: &mut Connection, fb: &mut Connection, c: &Case, fkey: &str) {
    let k = c.key.as_str();
    let want = answers(rb, c.kind, k);
    let got = answers(fb, c.kind, fkey);
    assert_same_answers(&got, &want, k, "");
    // MEMORY USAGE: RedisBloom reports its size formula; ferrobloom what the
    // allocator holds (the formula plus rounding and the structures around the
    // bits), so never less and not far more.
    let usage = |con: &mut Connection, key: &str| -> i64 {
        redis::cmd("MEMORY")
            .arg("USAGE")
            .arg(key)
            .query(con)
            .unwrap()
    };
    let (want, got) = (usage(rb, k), usage(fb, fkey));
    assert!(
        got >= want - 64 && got <= want * 4 + 4096,
        "MEMORY USAGE of {k}: {got} vs RedisBloom's {want}"
    );
}

pub fn compare_all(rb: &mut Connection, fb: &mut Connection, cases: &[Case]) {
    for c in cases {
        compare_key(rb, fb, c, &c.key);
    }
}

/// The further writes of every case, on both servers, replies compared.
pub fn evolve(rb: &mut Connection, fb: &mut Connection, cases: &[Case]) {
    for c in cases {
        for m in &c.more {
            both(rb, fb, m);
        }
    }
}

pub fn keys_of(cases: &[Case]) -> Vec<&str> {
    cases.iter().map(|c| c.key.as_str()).collect()
}

// ---------------------------------------------------------------------------------------------
// Hand-built payloads (RedisBloom's field orders)
// ---------------------------------------------------------------------------------------------

/// One field of a module value in RDB (`RedisModule_Save*`).
pub enum Field {
    U(u64),
    D(f64),
    S(Vec<u8>),
}

/// Module type id: 9 chars of a 64-symbol charset (6 bits each), then the 10-bit
/// encoding version.
pub fn module_type_id(name: &str, encver: u64) -> u64 {
    const CHARSET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut id = 0u64;
    for c in name.bytes() {
        id = (id << 6) | CHARSET.iter().position(|x| *x == c).unwrap() as u64;
    }
    (id << 10) | (encver & 1023)
}

/// A DUMP payload (RDB version 10, as Redis 7.0 writes) of a module value.
pub fn module_dump(name: &str, encver: u64, fields: &[Field]) -> Vec<u8> {
    let mut out = vec![RDB_TYPE_MODULE_2];
    out.extend(rdb_len(module_type_id(name, encver)));
    for f in fields {
        match f {
            Field::U(v) => {
                out.extend(rdb_len(2));
                out.extend(rdb_len(*v));
            }
            Field::D(v) => {
                out.extend(rdb_len(4));
                out.extend_from_slice(&v.to_le_bytes());
            }
            Field::S(s) => {
                out.extend(rdb_len(u64::from(MODULE_OPCODE_STRING)));
                out.extend(rdb_len(s.len() as u64));
                out.extend_from_slice(s);
            }
        }
    }
    out.extend(rdb_len(u64::from(MODULE_OPCODE_EOF)));
    seal(out, [10, 0])
}

pub fn bpe(error: f64) -> f64 {
    (error.ln() / 0.480453013918201).abs()
}

/// RedisBloom's `ceil(ln 2 · bpe)`, with its spelling of ln 2.
#[allow(clippy::approx_constant)]
pub fn hashes(error: f64) -> u64 {
    (0.693147180559945 * bpe(error)).ceil() as u64
}

/// A Bloom link in the field order of encoding version `encver`.
pub fn bloom_link(
    encver: u64,
    entries: u64,
    error: f64,
    bits: u64,
    n2: u64,
    bytes: usize,
) -> Vec<Field> {
    let mut v = vec![
        Field::U(entries),
        Field::D(error),
        Field::U(hashes(error)),
        Field::D(bpe(error)),
    ];
    if encver > 0 {
        v.push(Field::U(bits));
        v.push(Field::U(n2));
    }
    v.push(Field::S(vec![0; bytes]));
    v.push(Field::U(0));
    v
}

pub fn bloom_payload(encver: u64, options: u64, links: Vec<Vec<Field>>) -> Vec<u8> {
    let mut f = vec![Field::U(0), Field::U(links.len() as u64)];
    if encver >= 2 {
        f.push(Field::U(options));
    }
    if encver >= 4 {
        f.push(Field::U(2));
    }
    f.extend(links.into_iter().flatten());
    module_dump("MBbloom--", encver, &f)
}

/// Slot bytes of a hand-built cuckoo sub-filter: every third slot holds a
/// fingerprint (1-255, varied by `seed`), the others are empty.
fn old_slots(n: usize, seed: usize) -> Vec<u8> {
    (0..n)
        .map(|j| {
            if j % 3 == 0 {
                ((j * 37 + seed * 11) % 255 + 1) as u8
            } else {
                0
            }
        })
        .collect()
}

/// How many slots [`old_slots`] fills.
fn filled(n: usize) -> u64 {
    n.div_ceil(3) as u64
}

/// RedisBloom's older encoding versions (0-3), built by hand following the old
/// writers' field orders (RedisBloom 2.8.2 still reads them), with further writes
/// that grow them (32-bit hashing and power-of-two links included).
pub fn legacy_cases() -> Vec<Case> {
    let e = 0.01;
    let payloads: Vec<(&str, Kind, Vec<u8>)> = vec![
        // Version 0: no options (32-bit hashing, power-of-two growth), no bits/n2:
        // bits = entries * bpe, not a multiple of 8.
        (
            "bf:v0",
            Kind::Bloom,
            bloom_payload(0, 0, vec![bloom_link(0, 100, e, 0, 0, 120)]),
        ),
        // Version 1: a power-of-two link of RedisBloom 1.x (n2 = 10).
        (
            "bf:v1",
            Kind::Bloom,
            bloom_payload(1, 0, vec![bloom_link(1, 100, e, 1024, 10, 128)]),
        ),
        // Version 1 as RedisBloom 1.x wrote it for power-of-two links: bits 0.
        (
            "bf:v1-bits0",
            Kind::Bloom,
            bloom_payload(1, 0, vec![bloom_link(1, 100, e, 0, 10, 128)]),
        ),
        // Version 2: options (NOROUND, still 32-bit), growth 2 implied.
        (
            "bf:v2",
            Kind::Bloom,
            bloom_payload(2, 1, vec![bloom_link(2, 100, e, 960, 0, 120)]),
        ),
        // Version 3: FORCE64 | NOROUND, two links.
        (
            "bf:v3",
            Kind::Bloom,
            bloom_payload(
                3,
                5,
                vec![
                    bloom_link(3, 50, e / 2.0, 576, 0, 72),
                    bloom_link(3, 100, e / 4.0, 1344, 0, 168),
                ],
            ),
        ),
        // Cuckoo before version 4: no deletes/bucket size/iterations/expansion, and
        // every sub-filter has the base bucket count.
        // Versions 0 and 1 (same field order as 2 and 3), with fingerprints already in
        // the slots: a third of them filled, so some probes land on them.
        (
            "cf:v0",
            Kind::Cuckoo,
            module_dump(
                "MBbloomCF",
                0,
                &[
                    Field::U(1),
                    Field::U(16),
                    Field::U(filled(32)),
                    Field::S(old_slots(32, 1)),
                ],
            ),
        ),
        (
            "cf:v1",
            Kind::Cuckoo,
            module_dump(
                "MBbloomCF",
                1,
                &[
                    Field::U(2),
                    Field::U(32),
                    Field::U(2 * filled(64)),
                    Field::S(old_slots(64, 2)),
                    Field::S(old_slots(64, 3)),
                ],
            ),
        ),
        (
            "cf:v2",
            Kind::Cuckoo,
            module_dump(
                "MBbloomCF",
                2,
                &[
                    Field::U(2),
                    Field::U(32),
                    Field::U(0),
                    Field::S(vec![0; 64]),
                    Field::S(vec![0; 64]),
                ],
            ),
        ),
        (
            "cf:v3",
            Kind::Cuckoo,
            module_dump(
                "MBbloomCF",
                3,
                &[
                    Field::U(1),
                    Field::U(64),
                    Field::U(0),
                    Field::S(vec![0; 128]),
                ],
            ),
        ),
    ];
    payloads
        .into_iter()
        .map(|(key, kind, payload)| {
            let more = match kind {
                Kind::Bloom => vec![
                    with_items(&["BF.MADD", key], items("i", 300)),
                    with_items(&["BF.MADD", key], items("j", 300)),
                ],
                Kind::Cuckoo => {
                    let mut m = vec![with_items(&["CF.INSERT", key, "ITEMS"], items("i", 200))];
                    m.extend(items("i", 60).map(|i| cmd(&["CF.DEL", key, &i])));
                    m.push(with_items(&["CF.INSERT", key, "ITEMS"], items("j", 200)));
                    m
                }
            };
            Case {
                key: key.to_string(),
                kind,
                payload: Some(payload),
                setup: Vec::new(),
                more,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Answers: everything a client can ask about a filter, as comparable text
// ---------------------------------------------------------------------------------------------

/// Never-added items asked about (`p0`, `p1`, …), besides the members: some 200
/// false positives at 1% to compare item by item (the SCANDUMP stream, compared
/// whole, already shows every bit).
pub const PROBES: usize = 20_000;

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn kind_of(key: &str) -> Kind {
    if key.starts_with("bf:") {
        Kind::Bloom
    } else {
        Kind::Cuckoo
    }
}

/// What was asked and the reply, for: INFO (and BF.INFO's single fields), CARD
/// or a sample of CF.COUNT, DEBUG, MEXISTS of 800 members and [`PROBES`]
/// never-added items (recorded as a digest of every answer), and the whole
/// SCANDUMP stream (iterators and hex bytes).
pub fn answers(con: &mut Connection, kind: Kind, key: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut ask = |con: &mut Connection, what: String, c: Cmd| {
        let r = reply(con, &c);
        out.push((what, r));
    };
    let p = |name: &str| -> String { kind.prefix(name) };
    ask(con, p("INFO"), cmd(&[&p("INFO"), key]));
    ask(con, p("DEBUG"), cmd(&[&p("DEBUG"), key]));
    let members: Vec<String> = items("i", 400).chain(items("j", 400)).collect();
    if kind == Kind::Bloom {
        ask(con, p("CARD"), cmd(&[&p("CARD"), key]));
        for f in ["CAPACITY", "SIZE", "FILTERS", "ITEMS", "EXPANSION"] {
            ask(con, format!("BF.INFO {f}"), cmd(&["BF.INFO", key, f]));
        }
    } else {
        for i in members.iter().step_by(20).chain(&["p1".to_string()]) {
            ask(con, format!("CF.COUNT {i}"), cmd(&["CF.COUNT", key, i]));
        }
    }
    let probes: Vec<String> = members.into_iter().chain(items("p", PROBES)).collect();
    let mut mexists = redis::cmd(&p("MEXISTS"));
    mexists.arg(key).arg(&probes);
    let r: Vec<i64> = mexists
        .query(con)
        .unwrap_or_else(|e| panic!("MEXISTS {key}: {e}"));
    // Recorded compactly: the count of 1s, an FNV-1a digest of all the answers
    // (so the very same items must be positive), and the first twenty positives.
    let digest = r.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, v| {
        (h ^ (*v as u64 & 0xff)).wrapping_mul(0x0100_0000_01b3)
    });
    let ones: Vec<usize> = (0..r.len()).filter(|i| r[*i] == 1).collect();
    let first: Vec<String> = ones.iter().take(20).map(|i| i.to_string()).collect();
    out.push((
        p("MEXISTS"),
        format!(
            "{} of {} positive, digest {digest:016x}, first {}",
            ones.len(),
            r.len(),
            first.join(",")
        ),
    ));
    let stream: Vec<String> = scandump(con, kind, key)
        .into_iter()
        .map(|(it, d)| format!("{it}:{}", hex(&d)))
        .collect();
    out.push((p("SCANDUMP"), stream.join(" ")));
    out
}

/// `got` (ferrobloom) must equal `want` (RedisBloom), except that RedisBloom
/// dumps nothing for a cuckoo filter without items (its quirk Q13) and
/// ferrobloom dumps it.
pub fn assert_same_answers(
    got: &[(String, String)],
    want: &[(String, String)],
    key: &str,
    how: &str,
) {
    assert_eq!(got.len(), want.len(), "{key} {how}: answers");
    for ((gw, g), (ww, w)) in got.iter().zip(want) {
        assert_eq!(gw, ww);
        if ww == "CF.SCANDUMP" && w.is_empty() {
            assert!(!g.is_empty(), "{key} {how}: CF.SCANDUMP of an empty filter");
            continue;
        }
        assert_eq!(g, w, "{key} {how}: {ww}");
    }
}

/// `RESTORE key 0 payload`, which must succeed.
pub fn restore(con: &mut Connection, key: &str, payload: &[u8]) {
    let r: redis::RedisResult<Value> = redis::cmd("RESTORE")
        .arg(key)
        .arg(0)
        .arg(payload)
        .query(con);
    assert!(r.is_ok(), "RESTORE {key}: {r:?}");
}
