//! EXISTS and MEXISTS, written once for both filter types: open the key for
//! reading, hash (MEXISTS: [`HashAhead`] hashes a window of items ahead and
//! prefetches their cache lines), reply one boolean per item; a missing key
//! answers 0 for every item.

use super::api::{Args, Ctx, Key, ModuleType};
use super::handler::{check_items, key_name, CmdResult};
use super::value::FilterValue;
use crate::cmd::errors::CmdError;
use ferrobloom_core::cuckoo::{hash_for, CuckooFilter};
use ferrobloom_core::filter::BloomFilter;
use ferrobloom_core::hash::HashAhead;

/// What a lookup needs of a filter.
pub trait Probe: FilterValue {
    type Hash: Copy;
    /// The filter's item hashing, detached from the filter (batches hash ahead).
    fn hasher(&self) -> impl Fn(&[u8]) -> Self::Hash;
    fn prefetch(&self, h: &Self::Hash);
    fn contains(&self, h: &Self::Hash) -> bool;
    /// What a lookup reads at (a windowed Bloom filter's `Window::read_mark` of
    /// the server time), computed once per command.
    fn read_time(&self) -> u64 {
        0
    }
    /// [`contains`](Self::contains) at `now` (from [`read_time`](Self::read_time)).
    #[inline]
    fn contains_at(&self, h: &Self::Hash, _now: u64) -> bool {
        self.contains(h)
    }
    /// The whole of MEXISTS's answer for the items, when the filter answers a
    /// batch at once (`None`: item by item). `Some(Err)` when there was no
    /// memory for it.
    fn answer_batch<'a>(
        &self,
        _items: impl Iterator<Item = &'a [u8]>,
        _n: usize,
        _now: u64,
    ) -> Option<Result<Vec<u64>, CmdError>> {
        None
    }
}

impl Probe for BloomFilter {
    type Hash = ferrobloom_core::hash::ItemHash;
    fn hasher(&self) -> impl Fn(&[u8]) -> Self::Hash {
        let scheme = self.scheme();
        move |i| scheme.bloom(i)
    }
    #[inline]
    fn prefetch(&self, h: &Self::Hash) {
        BloomFilter::prefetch(self, h)
    }
    #[inline]
    fn contains(&self, h: &Self::Hash) -> bool {
        self.contains_at(h, self.read_time())
    }
    /// The server clock is read only for a filter whose answers depend on time.
    fn read_time(&self) -> u64 {
        if self.is_timed() {
            self.read_mark(super::window::now_ms())
        } else {
            0
        }
    }
    #[inline]
    fn contains_at(&self, h: &Self::Hash, mark: u64) -> bool {
        self.contains_marked(h, mark)
    }
    /// A kind that answers a batch at once (a windowed filter, generation by
    /// generation: `Window::contains_batch`): one bit per item.
    fn answer_batch<'a>(
        &self,
        items: impl Iterator<Item = &'a [u8]>,
        n: usize,
        mark: u64,
    ) -> Option<Result<Vec<u64>, CmdError>> {
        if !self.answers_in_bulk() {
            return None;
        }
        let scheme = self.scheme();
        let (mut hashes, mut found) = (Vec::new(), Vec::new());
        if hashes.try_reserve_exact(n).is_err() || found.try_reserve_exact(n.div_ceil(64)).is_err()
        {
            return Some(Err(crate::cmd::errors::bloom(
                crate::cmd::errors::Op::Insert,
                &ferrobloom_core::bloom::BloomError::AllocFailed,
            )));
        }
        hashes.extend(items.map(|i| scheme.bloom(i)));
        found.resize(n.div_ceil(64), 0);
        self.contains_bits(&hashes, mark, &mut found);
        Some(Ok(found))
    }
}

impl Probe for CuckooFilter {
    type Hash = ferrobloom_core::cuckoo::CuckooHash;
    fn hasher(&self) -> impl Fn(&[u8]) -> Self::Hash {
        let rb = self.is_redisbloom();
        move |i| hash_for(rb, i)
    }
    #[inline]
    fn prefetch(&self, h: &Self::Hash) {
        CuckooFilter::prefetch(self, h)
    }
    #[inline]
    fn contains(&self, h: &Self::Hash) -> bool {
        CuckooFilter::contains(self, h)
    }
}

/// BF.EXISTS / CF.EXISTS key item
pub fn exists<T: Probe>(ctx: Ctx, args: Args, ty: &ModuleType<T>) -> CmdResult {
    if args.len() != 3 {
        return Err(CmdError::WrongArity);
    }
    check_items(ctx, &args, 2)?;
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let present = key
        .present(ty)
        .is_some_and(|f| f.contains_at(&f.hasher()(args.bytes(2)), f.read_time()));
    ctx.reply_bool(present);
    Ok(())
}

/// BF.MEXISTS / CF.MEXISTS key item [item ...]
pub fn mexists<T: Probe>(ctx: Ctx, args: Args, ty: &ModuleType<T>) -> CmdResult {
    if args.len() < 3 {
        return Err(CmdError::WrongArity);
    }
    check_items(ctx, &args, 2)?;
    let mut key = Key::open(ctx, key_name(&args)?, false);
    let n = args.len() - 2;
    let Some(f) = key.present(ty) else {
        ctx.reply_array(n);
        (0..n).for_each(|_| ctx.reply_bool(false));
        return Ok(());
    };
    let now = f.read_time();
    match f.answer_batch(args.iter_from(2), n, now) {
        Some(found) => {
            let found = found?;
            ctx.reply_array(n);
            for i in 0..n {
                ctx.reply_bool(found.get(i / 64).is_some_and(|w| (w >> (i % 64)) & 1 == 1));
            }
        }
        None => {
            ctx.reply_array(n);
            let mut ahead = HashAhead::new(args.iter_from(2), f.hasher());
            while let Some(h) = ahead.next_with(|h| f.prefetch(h)) {
                ctx.reply_bool(f.contains_at(&h, now));
            }
        }
    }
    Ok(())
}
