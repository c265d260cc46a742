//! The readers refuse every state no command sequence creates (a link whose
//! capacity its bits cannot hold, a capacity above BF.RESERVE's or CF.RESERVE's
//! 2^30, an expansion above 32768), with the limits' texts; and whatever they
//! accept takes items afterwards without a panic (a windowed filter's growth
//! from a loaded state included).

use crate::bloom::{
    BloomChain, BloomError, BloomLayout, Limits, LinkShape, CAPACITY_ABOVE_BITS,
    CAPACITY_TOO_LARGE, EXPANSION_TOO_LARGE, LINK_ABOVE_GROWTH, MAX_CAPACITY,
};
use crate::cuckoo::{CuckooError, CuckooFilter, CuckooParams};
use crate::dump::{load_chunks, Scandump, LOAD_LIMITS};
use crate::filter::BloomFilter;
use crate::hash::ItemHash;
use crate::window::Window;

const T0: u64 = 1_764_000_000_000;
/// The fixed part of a windowed header, a generation record's index and
/// length, and a plain header's fixed part: the first link record of the
/// oldest generation starts here.
const FIRST_GEN_LINK: usize = 48 + 12 + 24;
/// A plain (version 1) header's first link record.
const FIRST_LINK: usize = 24;
const LINK_RECORD: usize = 40;

fn item(i: u64) -> ItemHash {
    ItemHash::of(format!("item-{i}").as_bytes())
}

fn put_u64(h: &mut [u8], at: usize, v: u64) {
    h[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn put_u32(h: &mut [u8], at: usize, v: u32) {
    h[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Writes a link shape's entries, error, bits and hashes into the link record at `at`.
fn put_shape(h: &mut [u8], at: usize, s: &LinkShape) {
    put_u64(h, at, s.entries);
    put_u64(h, at + 16, s.error.to_bits());
    put_u64(h, at + 24, s.bits);
    put_u32(h, at + 32, s.hashes);
}

/// A windowed filter of capacity 100 (a share of 25 per generation) whose
/// current generation took 60 items at one instant: several links.
fn grown_window() -> Window {
    let mut w = Window::new(100, 0.01, 2, BloomLayout::Paired, 1000, &Limits::default()).unwrap();
    for i in 0..60 {
        w.add(&item(i), T0, &Limits::default()).unwrap();
    }
    let links = w
        .generation_list()
        .map(|(_, c)| c.links().len())
        .sum::<usize>();
    assert!(links >= 2, "{links}");
    w
}

/// Every local reader of a header (with its chunks): the filter or the error.
fn load_every_way(h: &[u8], chunks: &[(i64, Vec<u8>)]) -> Result<BloomFilter, String> {
    let direct = BloomFilter::from_header(h, &LOAD_LIMITS).map_err(|e| format!("{e:?}"));
    let mut all: Vec<(i64, &[u8])> = vec![(1, h)];
    all.extend(chunks.iter().map(|(i, d)| (*i, d.as_slice())));
    let loaded = load_chunks::<BloomFilter>(&all, &LOAD_LIMITS);
    assert_eq!(
        direct.is_ok(),
        loaded.is_ok(),
        "{:?} / {:?}",
        direct.as_ref().err(),
        loaded.as_ref().err()
    );
    loaded
}

fn chunks_of(f: &BloomFilter) -> Vec<(i64, Vec<u8>)> {
    let mut out = Vec::new();
    f.for_each_chunk(|i, d| out.push((i, d.to_vec())));
    out
}

/// A windowed filter whose first link claims 2^49 + 25 items in the bits of
/// 25: refused by every reader (it was accepted, and the generation's next
/// link then panicked in the sizing code).
#[test]
fn a_link_capacity_its_bits_cannot_hold_is_refused() {
    let f = BloomFilter::from(grown_window());
    let chunks = chunks_of(&f);
    let mut h = f.encode_header();
    assert_eq!(
        u64::from_le_bytes(h[FIRST_GEN_LINK..FIRST_GEN_LINK + 8].try_into().unwrap()),
        25
    );
    put_u64(&mut h, FIRST_GEN_LINK, (1 << 49) + 25);
    let e = load_every_way(&h, &chunks).err().unwrap();
    assert!(e.contains(CAPACITY_ABOVE_BITS), "{e}");
    assert_eq!(
        BloomFilter::from_header(&h, &LOAD_LIMITS).err(),
        Some(BloomError::BadHeader(CAPACITY_ABOVE_BITS))
    );
    // The same lie in a plain chain.
    let mut c = BloomChain::with_options(
        1000,
        0.01,
        2,
        BloomLayout::Classic,
        Default::default(),
        &Limits::default(),
    )
    .unwrap();
    c.add(&item(1), &Limits::default()).unwrap();
    let c = BloomFilter::from(c);
    let mut h = c.encode_header();
    put_u64(&mut h, FIRST_LINK, 1000 * 2);
    assert_eq!(
        BloomFilter::from_header(&h, &LOAD_LIMITS).err(),
        Some(BloomError::BadHeader(CAPACITY_ABOVE_BITS))
    );
    // The true header loads.
    assert!(load_every_way(&f.encode_header(), &chunks).is_ok());
}

/// A loaded windowed filter whose first link is far larger than the links
/// after it (each link's bits hold its capacity, so the readers accept it)
/// grows without a panic when its generation fills its last link: the
/// sizing's floor for a growth link (a 16th of the first) exceeded its
/// ceiling (the last link times the expansion, or a share).
#[test]
fn a_window_grows_from_any_accepted_state() {
    let f = BloomFilter::from(grown_window());
    let mut h = f.encode_header();
    let first = f
        .as_window()
        .unwrap()
        .generation_list()
        .next()
        .unwrap()
        .1
        .links()[0]
        .shape()
        .to_owned();
    let big = LinkShape::with_layout(100_000, first.error, BloomLayout::Paired, false).unwrap();
    put_shape(&mut h, FIRST_GEN_LINK, &big);
    let mut g = BloomFilter::from_header(&h, &LOAD_LIMITS).unwrap();
    let w = g.as_window_mut().unwrap();
    let lim = Limits::default();
    for i in 1000..3000 {
        // Late in the same generation first (so the growth link's projected
        // size is below the floor), then later ones (rotation and growth).
        let now = T0 + 240 + (i - 1000) / 4;
        let h = item(i);
        w.add(&h, now, &lim).unwrap();
        assert!(w.contains(&h, now));
    }
    // The links it added are sized, not panicked over: every header it writes loads.
    assert!(BloomFilter::from_header(&g.encode_header(), &LOAD_LIMITS).is_ok());
}

/// A plain chain: a first link above BF.RESERVE's capacity, or a later link
/// above the expansion times the one before, is refused (its bits hold it:
/// only the bound refuses it); exactly 2^30 loads.
#[test]
fn a_plain_chain_above_reserve_capacity_is_refused() {
    let c = BloomChain::with_options(
        1000,
        0.01,
        2,
        BloomLayout::Classic,
        Default::default(),
        &Limits::default(),
    )
    .unwrap();
    let h = BloomFilter::from(c).encode_header();
    let error = f64::from_bits(u64::from_le_bytes(
        h[FIRST_LINK + 16..FIRST_LINK + 24].try_into().unwrap(),
    ));
    for (cap, ok) in [(MAX_CAPACITY, true), (MAX_CAPACITY + 1, false)] {
        let mut h = h.clone();
        let s = LinkShape::with_layout(cap, error, BloomLayout::Classic, false).unwrap();
        put_shape(&mut h, FIRST_LINK, &s);
        // Checked without allocating the 1.2 GB the header describes.
        let r = BloomFilter::header_link_bytes(&h, &LOAD_LIMITS, None);
        if ok {
            assert!(r.is_ok(), "{r:?}");
        } else {
            assert_eq!(r.err(), Some(BloomError::BadHeader(CAPACITY_TOO_LARGE)));
        }
    }
    // A chain with two links: the second at most twice the first.
    let mut c = BloomChain::with_options(
        10,
        0.01,
        2,
        BloomLayout::Classic,
        Default::default(),
        &Limits::default(),
    )
    .unwrap();
    for i in 0..15 {
        c.add(&item(i), &Limits::default()).unwrap();
    }
    assert_eq!(c.links().len(), 2);
    let second = *c.links()[1].shape();
    let h = BloomFilter::from(c).encode_header();
    assert!(BloomFilter::header_link_bytes(&h, &LOAD_LIMITS, None).is_ok());
    let mut bad = h.clone();
    let s = LinkShape::with_layout(21, second.error, second.layout, false).unwrap();
    put_shape(&mut bad, FIRST_LINK + LINK_RECORD, &s);
    assert_eq!(
        BloomFilter::header_link_bytes(&bad, &LOAD_LIMITS, None).err(),
        Some(BloomError::BadHeader(LINK_ABOVE_GROWTH))
    );
    // The constructors refuse what the readers refuse.
    assert_eq!(
        BloomChain::new(MAX_CAPACITY + 1, 0.01, 2, &Limits::default()).err(),
        Some(BloomError::InvalidParams(CAPACITY_TOO_LARGE))
    );
}

/// A windowed filter's capacity above 2^30 and an expansion above 32768 are
/// refused by the readers, with the commands' texts, and by `Window::new`.
#[test]
fn a_window_above_reserve_limits_is_refused() {
    let w = Window::new(100, 0.01, 2, BloomLayout::Paired, 1000, &Limits::default()).unwrap();
    let h = BloomFilter::from(w).encode_header();
    let mut cap = h.clone();
    put_u64(&mut cap, 16, MAX_CAPACITY + 1);
    assert_eq!(
        BloomFilter::from_header(&cap, &LOAD_LIMITS).err(),
        Some(BloomError::BadHeader(CAPACITY_TOO_LARGE))
    );
    put_u64(&mut cap, 16, MAX_CAPACITY);
    assert!(BloomFilter::from_header(&cap, &LOAD_LIMITS).is_ok());
    let mut exp = h.clone();
    put_u32(&mut exp, 32, 32769);
    assert_eq!(
        BloomFilter::from_header(&exp, &LOAD_LIMITS).err(),
        Some(BloomError::BadHeader(EXPANSION_TOO_LARGE))
    );
    assert!(Window::new(
        MAX_CAPACITY + 1,
        0.01,
        2,
        BloomLayout::Paired,
        1000,
        &Limits::default()
    )
    .is_err());
    // A plain chain's expansion.
    let c = BloomChain::new(10, 0.01, 2, &Limits::default()).unwrap();
    let mut h = BloomFilter::from(c).encode_header();
    put_u32(&mut h, 16, 32769);
    assert_eq!(
        BloomFilter::from_header(&h, &LOAD_LIMITS).err(),
        Some(BloomError::BadHeader(EXPANSION_TOO_LARGE))
    );
}

/// A cuckoo filter of ferrobloom's layout whose first sub-filter has more
/// buckets than CF.RESERVE's 2^30 capacity gives is refused (checked before
/// any allocation); the largest CF.RESERVE creates loads.
#[test]
fn a_cuckoo_filter_above_reserve_capacity_is_refused() {
    for bucket_size in [1u8, 2, 3, 4] {
        let p = CuckooParams {
            capacity: 64,
            bucket_size,
            ..CuckooParams::default()
        };
        let h = CuckooFilter::new(&p, u64::MAX).unwrap().encode_header();
        let most = (MAX_CAPACITY / u64::from(bucket_size)).next_power_of_two();
        for (base, ok) in [(most, true), (most * 2, false)] {
            let mut h = h.clone();
            put_u64(&mut h, 24, base);
            let r = CuckooFilter::header_table_bytes(&h, u64::MAX, 1, Some(false));
            if ok {
                assert!(r.is_ok(), "{bucket_size} {r:?}");
            } else {
                assert_eq!(
                    r.err(),
                    Some(CuckooError::BadHeader(crate::cuckoo::CAPACITY_TOO_LARGE))
                );
            }
        }
        let big = CuckooParams {
            capacity: MAX_CAPACITY + 1,
            bucket_size,
            ..CuckooParams::default()
        };
        assert!(CuckooFilter::new(&big, u64::MAX).is_err());
    }
}

/// A windowed filter's dump, loaded back through `load_chunks`, takes items
/// through the local API's add path as the original does.
#[test]
fn loaded_filters_take_items() {
    let lim = Limits::default();
    let mut f = BloomFilter::from(grown_window());
    let mut all = Vec::new();
    f.for_each_dump_chunk(|i, d| all.push((i, d.to_vec())));
    let refs: Vec<(i64, &[u8])> = all.iter().map(|(i, d)| (*i, d.as_slice())).collect();
    let mut g: BloomFilter = load_chunks(&refs, &LOAD_LIMITS).unwrap();
    for i in 0..500u64 {
        let it = format!("x{i}");
        let now = T0 + i * 10;
        assert!(g.add_item(it.as_bytes(), now, &lim).is_ok());
        assert!(g.contains_item(it.as_bytes(), now));
        assert!(f.add_item(it.as_bytes(), now, &lim).is_ok());
    }
}

/// A walk's budget from its header: a true walk of every kind fits it
/// exactly (bytes) and within its chunk margin; a walk that cycles with empty
/// chunks, repeats a chunk, or sends new 1 MiB chunks without end is stopped
/// once it goes past the header (a chunk count or byte count the header
/// gives), with a clear error.
#[test]
fn a_walk_is_bounded_by_its_header() {
    use crate::dump::{WalkBudget, WALK_MIN_CHUNK};
    let f = BloomFilter::from(grown_window());
    let chain = BloomFilter::from(BloomChain::new(5_000_000, 0.01, 2, &Limits::default()).unwrap());
    let cuckoo = CuckooFilter::new(&CuckooParams::default(), u64::MAX).unwrap();
    fn walk_fits<T: Scandump>(f: &T) -> WalkBudget {
        let mut replies = Vec::new();
        f.for_each_dump_chunk(|i, d| replies.push((i, d.to_vec())));
        let mut b = WalkBudget::of::<T>(&replies[0].1).unwrap();
        for (_, d) in replies.iter().skip(1) {
            b.take(d.len() as u64).unwrap();
        }
        assert_eq!(b.bytes, 0);
        b
    }
    walk_fits(&f);
    walk_fits(&cuckoo);
    // Hostile walks, after the header of the chain.
    let header = chain.encode_header();
    let fresh = || WalkBudget::of::<BloomFilter>(&header).unwrap();
    // 6.9 MB in one link: one chunk (of at most 16 MiB) taken, and as many
    // more as 64 KiB chunks would need.
    let left = walk_fits(&chain);
    assert_eq!(left.chunks, fresh().bytes.div_ceil(WALK_MIN_CHUNK) - 1);
    let mut b = fresh();
    let steps = (0..u64::MAX).take_while(|_| b.take(0).is_ok()).count() as u64;
    assert_eq!(steps, fresh().chunks);
    let mut b = fresh();
    let mut sent = 0u64;
    while b.take(1 << 20).is_ok() {
        sent += 1 << 20;
    }
    assert!(sent <= fresh().bytes && sent + (1 << 20) > fresh().bytes);
    let e = fresh().take(fresh().bytes + 1).unwrap_err();
    assert!(e.contains("went past what its header describes"), "{e}");
    // A header that does not load gives no budget.
    assert!(WalkBudget::of::<BloomFilter>(b"junk").is_err());
    assert!(WalkBudget::of::<CuckooFilter>(&header).is_err());
}

/// A windowed filter dated ahead of this machine's clock (written where the
/// clock is 10 minutes ahead) and loaded here goes on from its newest change
/// at the clock's rate, as a server runs it: a 1 s, capacity-100 NONSCALING
/// filter takes 800 items over 8 windows' worth of generations. (Pinned to
/// its newest change it took one generation's worth and refused the rest.)
#[test]
fn a_window_dated_ahead_runs_on_from_its_newest_change() {
    use crate::dump::clock_ms;
    let lim = Limits::default();
    let ahead = clock_ms() + 600_000;
    let mut w = Window::new(100, 0.01, 0, BloomLayout::Paired, 1000, &lim).unwrap();
    for i in 0..50 {
        w.add(&item(i), ahead, &lim).unwrap();
    }
    let mut replies = Vec::new();
    BloomFilter::from(w).for_each_dump_chunk(|i, d| replies.push((i, d.to_vec())));
    let refs: Vec<(i64, &[u8])> = replies.iter().map(|(i, d)| (*i, d.as_slice())).collect();
    let mut f: BloomFilter = load_chunks(&refs, &LOAD_LIMITS).unwrap();
    let start = clock_ms();
    let mut took = 0;
    for step in 0..80u64 {
        // 10 items every 100 ms of this machine's clock (simulated).
        let now = start + step * 100;
        for k in 0..10 {
            let it = format!("new-{step}-{k}");
            if f.add_item(it.as_bytes(), now, &lim).is_ok() {
                took += 1;
                assert!(f.contains_item(it.as_bytes(), now));
            }
        }
    }
    assert!(took >= 760, "took {took} of 800");
    // The items added first are forgotten a window and a generation later.
    let later = start + 80 * 100 + 1300;
    assert!((0..50).all(|i| !f.as_window().unwrap().contains(&item(i), later)));
}
