//! Tracked cuckoo filters and their snapshots (`KeySnap`), and the standard filter set every
//! round trip carries (`build_set`, `build_compacting`, `more_writes`).

use super::*;

// ---------------------------------------------------------------------------------------------
// Tracked filters and snapshots
// ---------------------------------------------------------------------------------------------

/// A filter key and the multiset of items it holds.
#[derive(Clone, Debug)]
pub struct Tracked {
    pub key: Vec<u8>,
    pub copies: BTreeMap<Vec<u8>, u64>,
}

impl Tracked {
    pub fn new(key: &[u8]) -> Tracked {
        Tracked {
            key: key.to_vec(),
            copies: BTreeMap::new(),
        }
    }

    pub fn add(&mut self, items: &[Vec<u8>]) {
        for i in items {
            *self.copies.entry(i.clone()).or_insert(0) += 1;
        }
    }

    pub fn remove(&mut self, items: &[Vec<u8>]) {
        for i in items {
            let c = self.copies.get_mut(i).expect("removing an untracked item");
            *c -= 1;
            if *c == 0 {
                self.copies.remove(i);
            }
        }
    }

    pub fn items(&self) -> Vec<Vec<u8>> {
        self.copies.keys().cloned().collect()
    }
}

pub fn find<'a>(set: &'a mut [Tracked], key: &[u8]) -> &'a mut Tracked {
    set.iter_mut()
        .find(|t| t.key == key)
        .unwrap_or_else(|| panic!("no tracked key {}", lossy(key)))
}

/// Never-inserted items: their answers pin the fingerprints (false positives included).
pub fn probes() -> Vec<Vec<u8>> {
    let mut v = names("probe:", 3000);
    v.extend(binary_probes());
    v
}

/// The observable state of one filter.
#[derive(Debug, PartialEq)]
pub struct KeySnap {
    pub info: String,
    pub debug: String,
    pub digest: String,
    pub counts: Vec<i64>,
    pub probes: Vec<bool>,
}

/// Snapshot of `key`, which must hold every item of `t` (with at least as many
/// CF.COUNT matches as copies).
pub fn key_snap(con: &mut Connection, key: &[u8], t: &Tracked) -> KeySnap {
    let items = t.items();
    let present = mexists(con, key, &items);
    let missing: Vec<String> = items
        .iter()
        .zip(&present)
        .filter(|(_, p)| !**p)
        .map(|(i, _)| lossy(i))
        .take(10)
        .collect();
    assert!(
        missing.is_empty(),
        "{}: inserted items missing (first 10): {missing:?}",
        lossy(key)
    );
    let c = counts(con, key, &items);
    for ((item, copies), got) in t.copies.iter().zip(&c) {
        assert!(
            *got >= *copies as i64,
            "{}: CF.COUNT {} = {got}, but it was added {copies} times",
            lossy(key),
            lossy(item)
        );
    }
    assert_eq!(
        info_int(con, key, "Number of items inserted"),
        t.copies.values().sum::<u64>() as i64,
        "{}: Number of items inserted",
        lossy(key)
    );
    KeySnap {
        info: info(con, key),
        debug: cf_debug(con, key),
        digest: digest_value(con, key),
        counts: c,
        probes: mexists(con, key, &probes()),
    }
}

pub fn assert_snap_eq(got: &KeySnap, want: &KeySnap, what: &str) {
    assert_eq!(got.info, want.info, "{what}: CF.INFO");
    assert_eq!(got.debug, want.debug, "{what}: CF.DEBUG");
    assert_eq!(got.digest, want.digest, "{what}: DEBUG DIGEST-VALUE");
    let diff = got
        .counts
        .iter()
        .zip(&want.counts)
        .filter(|(a, b)| a != b)
        .count();
    assert!(
        got.counts.len() == want.counts.len() && diff == 0,
        "{what}: CF.COUNT differs for {diff} items"
    );
    let diff = got
        .probes
        .iter()
        .zip(&want.probes)
        .filter(|(a, b)| a != b)
        .count();
    assert_eq!(diff, 0, "{what}: {diff} probes answer differently");
}

pub fn snapshot(con: &mut Connection, set: &[Tracked]) -> Vec<KeySnap> {
    set.iter().map(|t| key_snap(con, &t.key, t)).collect()
}

/// Every tracked key still holds exactly its snapshot.
pub fn assert_set(con: &mut Connection, set: &[Tracked], snap: &[KeySnap], what: &str) {
    assert_eq!(set.len(), snap.len());
    for (t, s) in set.iter().zip(snap) {
        let got = key_snap(con, &t.key, t);
        assert_snap_eq(&got, s, &format!("{what}, key {}", lossy(&t.key)));
    }
}

/// `dst` holds exactly what `src` holds.
pub fn assert_same(con: &mut Connection, src: &Tracked, dst: &[u8], what: &str) {
    let a = key_snap(con, &src.key, src);
    let b = key_snap(con, dst, src);
    assert_snap_eq(
        &b,
        &a,
        &format!("{what}: {} vs {}", lossy(dst), lossy(&src.key)),
    );
}

// ---------------------------------------------------------------------------------------------
// The standard filter set
// ---------------------------------------------------------------------------------------------

pub const PLAIN: &[u8] = b"cf:plain";
pub const GROWN: &[u8] = b"cf:grown";
pub const WIDE: &[u8] = b"cf:wide";
pub const ODD: &[u8] = b"cf:odd";
pub const AUTO: &[u8] = b"cf:auto";
pub const NX: &[u8] = b"cf:nx";
pub const EMPTY: &[u8] = b"cf:empty";
pub const ALLDEL: &[u8] = b"cf:alldel";
pub const ZERO3: &[u8] = b"cf:zero3";
pub const BINKEY: &[u8] = b"cf:bin\x00\xff\r\n key";
pub const COMPACTING: &[u8] = b"cf:compacting";

/// Every single byte value, the empty string, a 1 KiB item, RESP-looking items.
pub fn binary_items() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..=255u8).map(|b| vec![b]).collect();
    v.push(Vec::new());
    v.push((0..1024u32).map(|i| (i * 31 + 7) as u8).collect());
    v.push((0..=255u8).collect());
    v.push(b"\r\n$-1\r\n*3\r\n".to_vec());
    v.push(b"\x00\x00\x00\x00".to_vec());
    v
}

/// Builds the standard set: plain, with duplicates; grown (EXPANSION 2, deletes);
/// 17-bit fingerprints at bucket size 4; 10-bit fingerprints at bucket size 3 with
/// expansion 4; auto-created; CF.INSERTNX-created with ERROR; empty; all items
/// deleted; three empty sub-filters (loaded from a header); binary key and items;
/// a 4 MiB sub-filter with a compaction pass left half-way (flags 3).
pub fn build_set(con: &mut Connection) -> Vec<Tracked> {
    let mut set = Vec::new();

    ok(con, "CF.RESERVE cf:plain 1000");
    let mut t = Tracked::new(PLAIN);
    let items = names("p", 700);
    insert_ok(con, PLAIN, &items);
    t.add(&items);
    adds(con, PLAIN, &items[..100]);
    t.add(&items[..100]);
    adds(con, PLAIN, &items[..20]);
    t.add(&items[..20]);
    assert!(per_item(con, "CF.ADDNX", PLAIN, &items[..10])
        .iter()
        .all(|v| *v == 0));
    set.push(t);

    ok(con, "CF.RESERVE cf:grown 64 EXPANSION 2 MAXITERATIONS 30");
    let mut t = Tracked::new(GROWN);
    let items = names("g", 1500);
    insert_ok(con, GROWN, &items);
    t.add(&items);
    dels(con, GROWN, &items[..150]);
    t.remove(&items[..150]);
    assert!(filters(con, GROWN) >= 4);
    set.push(t);

    ok(con, "CF.RESERVE cf:wide 2000 BUCKETSIZE 4 ERROR 0.0001");
    assert_eq!(fp_size(con, WIDE), 17);
    let mut t = Tracked::new(WIDE);
    let items = names("w", 1500);
    insert_ok(con, WIDE, &items);
    t.add(&items);
    set.push(t);

    ok(
        con,
        "CF.RESERVE cf:odd 100 BUCKETSIZE 3 EXPANSION 3 ERROR 0.01",
    );
    assert_eq!(fp_size(con, ODD), 10);
    let mut t = Tracked::new(ODD);
    let items = names("o", 900);
    insert_ok(con, ODD, &items);
    t.add(&items);
    dels(con, ODD, &items[..50]);
    t.remove(&items[..50]);
    assert!(filters(con, ODD) >= 2);
    set.push(t);

    let mut t = Tracked::new(AUTO);
    assert_eq!(q(con, "CF.ADD cf:auto a-first"), "1");
    t.add(&[b"a-first".to_vec()]);
    let items = names("a", 300);
    insert_ok(con, AUTO, &items);
    t.add(&items);
    set.push(t);

    let mut t = Tracked::new(NX);
    let items = names("n", 200);
    let r = raw(
        con,
        &args_with(
            &[
                b"CF.INSERTNX",
                NX,
                b"CAPACITY",
                b"300",
                b"ERROR",
                b"0.001",
                b"ITEMS",
            ],
            &items,
        ),
    );
    let Value::Array(r) = r else {
        panic!("CF.INSERTNX: {}", show(&r))
    };
    for (item, v) in items.iter().zip(&r) {
        match v {
            Value::Int(1) => t.add(std::slice::from_ref(item)),
            Value::Int(0) => {}
            other => panic!("CF.INSERTNX element {}", show(other)),
        }
    }
    assert!(t.copies.len() >= 195);
    set.push(t);

    ok(con, "CF.RESERVE cf:empty 100");
    set.push(Tracked::new(EMPTY));

    ok(con, "CF.RESERVE cf:alldel 4 BUCKETSIZE 2");
    let items = names("d", 20);
    insert_ok(con, ALLDEL, &items);
    dels(con, ALLDEL, &items);
    assert_eq!(info_int(con, ALLDEL, "Number of items inserted"), 0);
    set.push(Tracked::new(ALLDEL));

    // Three empty sub-filters with a delete count: a filter whose items were all
    // deleted without the sub-filters being compacted away (quirk Q13).
    let mut h = Hdr::plain(2, 2, 3, 4);
    h.deletes = 7;
    okb(con, &[b"CF.LOADCHUNK".as_slice(), ZERO3, b"1", &h.encode()]);
    assert_eq!(filters(con, ZERO3), 3);
    set.push(Tracked::new(ZERO3));

    okb(con, &[b"CF.RESERVE".as_slice(), BINKEY, b"1000"]);
    let mut t = Tracked::new(BINKEY);
    let items = binary_items();
    insert_ok(con, BINKEY, &items);
    t.add(&items);
    adds(con, BINKEY, &items[..5]);
    t.add(&items[..5]);
    set.push(t);

    let t = build_compacting(con, COMPACTING);
    ok(con, "CF.COMPACT cf:compacting");
    let h = Hdr::decode(&header_of(con, COMPACTING));
    assert_eq!(
        h.flags, 3,
        "compaction pass in progress (continue mode): {h:?}"
    );
    assert_eq!(h.cursor_filter, 2, "{h:?}");
    assert!(h.cursor_slot > 0, "{h:?}");
    set.push(t);

    set
}

/// A filter with sub-filters of 4, 4096 and 4Mi slots (EXPANSION 1024) holding
/// items in all three, 10 of them deleted: one CF.COMPACT (about 1M slot-units of
/// work) cannot finish a pass over it.
pub fn build_compacting(con: &mut Connection, key: &[u8]) -> Tracked {
    okb(
        con,
        &[
            b"CF.RESERVE".as_slice(),
            key,
            b"4",
            b"BUCKETSIZE",
            b"2",
            b"EXPANSION",
            b"1024",
        ],
    );
    let mut t = Tracked::new(key);
    let mut n = 0;
    while filters(con, key) < 3 {
        assert!(n < 10_000, "the filter does not reach 3 sub-filters");
        let items = names(&format!("c{n}-"), 500);
        insert_ok(con, key, &items);
        t.add(&items);
        n += 500;
    }
    let items = names("c-late", 400);
    insert_ok(con, key, &items);
    t.add(&items);
    let some: Vec<Vec<u8>> = t.items().into_iter().take(10).collect();
    dels(con, key, &some);
    t.remove(&some);
    assert_eq!(info_int(con, key, "Number of items deleted"), 10);
    assert_eq!(Hdr::decode(&header_of(con, key)).flags, 0);
    t
}

/// More writes of every kind on the set (and a new auto-created key).
pub fn more_writes(con: &mut Connection, set: &mut Vec<Tracked>, tag: &str) {
    for t in set.iter_mut() {
        let key = t.key.clone();
        let new = names(&format!("{tag}:new:"), 40);
        adds(con, &key, &new);
        t.add(&new);
        adds(con, &key, &new[..5]);
        t.add(&new[..5]);
        let old: Vec<Vec<u8>> = t.items().into_iter().step_by(7).take(20).collect();
        dels(con, &key, &old);
        t.remove(&old);
        let nx = raw(con, &[b"CF.ADDNX".as_slice(), &key, &new[0]]);
        assert_eq!(show(&nx), "0");
    }
    for t in set.iter() {
        if t.key.ends_with(GROWN) || t.key.ends_with(COMPACTING) {
            okb(con, &[b"CF.COMPACT".as_slice(), &t.key]);
        }
    }
    let key = format!("{tag}:auto").into_bytes();
    let mut t = Tracked::new(&key);
    let items = names(&format!("{tag}:auto:"), 300);
    assert!(insert_any(con, &key, &items).iter().all(|v| *v == 1));
    t.add(&items);
    set.push(t);
}
