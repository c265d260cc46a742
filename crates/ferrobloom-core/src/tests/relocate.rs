//! Relocation passes (`crate::relocate`): every block a filter owns can move
//! while the filter keeps answering and encoding exactly as before, in passes
//! that stop and resume.

use std::alloc::{alloc, dealloc, Layout};
use std::ptr::NonNull;

use super::bloom::{BloomChain, BloomLayout, Limits};
use super::cuckoo::{CuckooFilter, CuckooParams};
use super::filter::BloomFilter;
use super::relocate::{Pass, Relocation, Relocator};
use super::window::Window;

/// Moves every block to a fresh allocation of the same layout (the global
/// allocator, as the contract asks) and scribbles over the old bytes before
/// freeing them, so a filter that kept an old address would read garbage (or
/// free twice); asks to stop once `budget` blocks were offered in a pass.
struct Mover {
    moved: usize,
    budget: u64,
    asked: u64,
}

// SAFETY: `relocate` allocates with the global allocator and `layout`, copies
// `layout.size()` bytes and frees the old block.
unsafe impl Relocator for Mover {
    fn relocate(&mut self, block: NonNull<u8>, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: the layout has a non-zero size (a pass offers no empty
        // block); `block` holds `layout.size()` bytes allocated by the global
        // allocator with `layout`.
        unsafe {
            let new = NonNull::new(alloc(layout))?;
            std::ptr::copy_nonoverlapping(block.as_ptr(), new.as_ptr(), layout.size());
            std::ptr::write_bytes(block.as_ptr(), 0xa5, layout.size());
            dealloc(block.as_ptr(), layout);
            self.moved += 1;
            Some(new)
        }
    }
    fn should_stop(&mut self) -> bool {
        self.asked += 1;
        self.asked >= self.budget
    }
}

/// Runs passes of at most `budget` blocks until one ends; returns the number
/// of passes and of blocks moved.
fn relocate_all(budget: u64, mut pass: impl FnMut(&mut Pass)) -> (u64, usize) {
    let (mut from, mut passes, mut moved) = (0, 0, 0);
    loop {
        let mut m = Mover {
            moved: 0,
            budget,
            asked: 0,
        };
        let mut p = Pass::new(&mut m, from);
        pass(&mut p);
        assert!(p.offered() <= budget, "a pass keeps to its budget");
        let end = p.finish();
        passes += 1;
        moved += m.moved;
        match end {
            Relocation::Done => return (passes, moved),
            Relocation::Paused(at) => {
                assert!(at > from, "every pass makes progress");
                from = at;
            }
        }
    }
}

#[test]
fn vecs_and_boxes_move_and_keep_their_contents() {
    let mut v: Vec<u64> = (0..100).collect();
    v.reserve_exact(7);
    let cap = v.capacity();
    let mut b: Box<[u32]> = (0..9).collect();
    let mut bx = Box::new([7u8; 40]);
    let mut empty: Vec<u64> = Vec::new();
    let (passes, moved) = relocate_all(u64::MAX, |p| {
        p.vec(&mut v);
        p.boxed_slice(&mut b);
        p.boxed(&mut bx);
        p.vec(&mut empty);
    });
    assert_eq!(
        (passes, moved),
        (1, 3),
        "the empty Vec is numbered, not moved"
    );
    assert_eq!(v, (0..100).collect::<Vec<_>>());
    assert_eq!(v.capacity(), cap);
    assert_eq!(&*b, &(0..9).collect::<Vec<_>>()[..]);
    assert_eq!(*bx, [7u8; 40]);
    v.push(1); // the moved buffer is a live allocation of its capacity
}

#[test]
fn a_pass_stops_and_resumes_where_it_stopped() {
    let mut vs: Vec<Vec<u16>> = (0..10).map(|i| vec![i; 5]).collect();
    let (passes, moved) = relocate_all(3, |p| {
        p.vec(&mut vs);
        p.items(&mut vs, |_| 1, |p, v| p.vec(v));
    });
    assert_eq!(moved, 11, "each block once");
    assert_eq!(passes, 4);
    for (i, v) in vs.iter().enumerate() {
        assert_eq!(v, &vec![i as u16; 5]);
    }
}

fn item(i: u64) -> Vec<u8> {
    format!("item-{i}").into_bytes()
}

/// Header and chunks: what RDB, DEBUG DIGEST and SCANDUMP see.
fn bloom_bytes(f: &BloomFilter) -> Vec<Vec<u8>> {
    let mut out = vec![f.encode_header()];
    f.for_each_chunk(|_, d| out.push(d.to_vec()));
    out
}

fn bloom_answers(f: &BloomFilter, now: u64) -> Vec<bool> {
    (0..3000).map(|i| f.contains_item(&item(i), now)).collect()
}

/// Relocates `f` whole in passes of `budget` blocks and checks it encodes and
/// answers as before, then still grows and frees normally.
fn check_bloom(mut f: BloomFilter, now: u64, budget: u64, what: &str) {
    let (bytes, answers) = (bloom_bytes(&f), bloom_answers(&f, now));
    let mut blocks = 0;
    f.heap_blocks(&mut |_, _, _| blocks += 1);
    let numbered = f.block_count();
    let (passes, moved) = relocate_all(budget, |p| f.relocate_blocks(p));
    assert!(
        moved >= blocks,
        "{what}: every block moved ({moved} of {blocks})"
    );
    assert!(
        numbered as usize >= moved,
        "{what}: block_count counts them"
    );
    assert!(
        budget == u64::MAX || passes >= numbered / budget,
        "{what}: {passes} passes"
    );
    assert!(bloom_bytes(&f) == bytes, "{what}: encoding changed");
    assert!(bloom_answers(&f, now) == answers, "{what}: answers changed");
}

#[test]
fn bloom_chains_windows_and_their_blocks_move_intact() {
    let lim = Limits::default();
    for (layout, budget) in [
        (BloomLayout::Classic, u64::MAX),
        (BloomLayout::Blocked, 2),
        (BloomLayout::Paired, 1),
        (BloomLayout::RedisBloom, 3),
    ] {
        let mut c = BloomChain::with_layout(100, 0.01, 2, layout, &lim).unwrap();
        for i in 0..2000 {
            c.add(&c.hash(&item(i)), &lim).unwrap();
        }
        assert!(c.links().len() >= 4);
        check_bloom(BloomFilter::from(c), 0, budget, &format!("{layout:?}"));
    }
    // A link over 1 MiB: its written-chunk map is a block too.
    let mut big = BloomChain::new(1_000_000, 0.001, 2, &lim).unwrap();
    for i in 0..3000 {
        big.add(&big.hash(&item(i)), &lim).unwrap();
    }
    check_bloom(BloomFilter::from(big), 0, 2, "1.8 MB link");
    // A window with several generations and dropped ones not yet taken.
    let mut w = Window::new(200, 0.01, 2, BloomLayout::Paired, 1000, &lim).unwrap();
    let t0 = 1_764_000_000_000;
    for i in 0..3000u64 {
        w.add(&w.hash(&item(i)), t0 + i, &lim).unwrap();
    }
    let now = t0 + 3000;
    check_bloom(BloomFilter::from(w), now, 3, "window");
}

#[test]
fn cuckoo_tables_move_intact() {
    for redisbloom in [false, true] {
        let p = CuckooParams {
            capacity: 64,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1,
            fp_bits: 8,
            error_rate: None,
            redisbloom,
        };
        let mut f = CuckooFilter::new(&p, u64::MAX).unwrap();
        for i in 0..3000 {
            f.insert(&f.hash(&item(i)), 1000, u64::MAX).unwrap();
        }
        assert!(f.num_filters() > 20);
        let bytes = |f: &CuckooFilter| {
            let mut out = vec![f.encode_header()];
            f.for_each_chunk(|_, d| out.push(d.to_vec()));
            out
        };
        let answers = |f: &CuckooFilter| -> Vec<bool> {
            (0..4000).map(|i| f.contains(&f.hash(&item(i)))).collect()
        };
        let (b, a) = (bytes(&f), answers(&f));
        let mut blocks = 0;
        f.heap_blocks(&mut |_, _, _| blocks += 1);
        let (passes, moved) = relocate_all(5, |p| f.relocate_blocks(p));
        assert!(moved >= blocks && passes > 5);
        assert!(
            bytes(&f) == b && answers(&f) == a,
            "redisbloom {redisbloom}"
        );
        for i in 3000..3500 {
            f.insert(&f.hash(&item(i)), 1000, u64::MAX).unwrap();
        }
    }
}
