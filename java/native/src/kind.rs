//! The binding's seam over the filter kind: what `BloomFilter` and
//! `CuckooFilter` answer differently, written once per kind ([`JavaKind`]),
//! and every entry point both kinds share written once over it (`lib.rs`
//! dispatches a Java kind code to them with [`by_kind!`]). What only one kind
//! has (merges, deletes, counts) and the hot per-item and batch calls stay in
//! `bloom.rs` / `cuckoo.rs`, each on the helpers here.

use jni::objects::{JByteArray, JIntArray, JObject, JObjectArray};
use jni::sys::{jint, jlong, jobject};
use jni::JNIEnv;

use ferrobloom_cmd::create;
use ferrobloom_cmd::errors::{self as e, Op};
use ferrobloom_core::api::{Scandump, SERVER_DEFAULT_LIMITS};
use ferrobloom_core::bloom::{BloomError, Limits};
use ferrobloom_core::cuckoo::{CuckooError, CuckooFilter};
use ferrobloom_core::filter::BloomFilter;

use crate::error::{guard, Error, Result};
use crate::ffi::{new_handle, slot, Slot};
use crate::{byte_arrays, now_ms, with_item, with_scratch, Scratch};

/// What the binding asks of a filter kind. Its refusals carry the server's
/// texts (`ferrobloom_cmd::errors`); a refusal of the allocator is an
/// `OutOfMemoryError`.
pub(crate) trait JavaKind: Scandump + Sized {
    /// Why an operation is refused.
    type Refusal;

    /// `RESERVE`'s arguments after the key, as a client sends them.
    fn reserve(args: &[&[u8]]) -> std::result::Result<Self, ferrobloom_cmd::errors::CmdError>;
    /// The server's text for a refusal of `op`.
    fn text(op: Op, err: &Self::Refusal) -> String;
    /// Whether the refusal is the allocator's.
    fn out_of_memory(err: &Self::Refusal) -> bool;
    /// A batch element for Java: 0 not added (present), 1 added, 2 and up a
    /// refusal, whose text [`of_code`](Self::of_code) gives back.
    fn code(r: &std::result::Result<bool, Self::Refusal>) -> i8;
    /// The refusal of a code [`code`](Self::code) gave.
    fn of_code(c: jint) -> Self::Refusal;
    /// A deep copy.
    fn copy(&self) -> std::result::Result<Self, Self::Refusal>;
    /// `INFO`'s fields, then the kind's own (`Native.java` names them).
    fn info(&self) -> Vec<i64>;
    /// The error rate it was created with (NaN: none, 8-bit fingerprints).
    fn error_rate_of(&self) -> f64;
    /// Refused, with the server's insert text, when a server with these
    /// limits (`max_bytes`, links or sub-filters; negative: the default)
    /// would refuse the filter.
    fn check_limits(
        &self,
        max_bytes: jlong,
        max_parts: jint,
    ) -> std::result::Result<(), Self::Refusal>;
}

/// The exception for a refusal of `op`, with the server's text.
pub(crate) fn refused<T: JavaKind>(op: Op, err: &T::Refusal) -> Error {
    let text = T::text(op, err);
    if T::out_of_memory(err) {
        Error::OutOfMemory(text)
    } else {
        Error::Filter(text)
    }
}

impl JavaKind for BloomFilter {
    type Refusal = BloomError;

    fn reserve(args: &[&[u8]]) -> std::result::Result<Self, e::CmdError> {
        create::reserve_bloom(args)
    }
    fn text(op: Op, err: &BloomError) -> String {
        e::bloom(op, err).text().to_string()
    }
    fn out_of_memory(err: &BloomError) -> bool {
        *err == BloomError::AllocFailed
    }
    fn code(r: &std::result::Result<bool, BloomError>) -> i8 {
        match r {
            Ok(b) => i8::from(*b),
            Err(BloomError::Full) => 2,
            Err(BloomError::MaxLinks) => 3,
            Err(BloomError::MemoryCap) => 4,
            Err(BloomError::AllocFailed) => 5,
            Err(BloomError::TooManyHashes) => 6,
            Err(_) => 7,
        }
    }
    fn of_code(c: jint) -> BloomError {
        match c {
            2 => BloomError::Full,
            3 => BloomError::MaxLinks,
            4 => BloomError::MemoryCap,
            5 => BloomError::AllocFailed,
            6 => BloomError::TooManyHashes,
            _ => BloomError::BadChunk,
        }
    }
    fn copy(&self) -> std::result::Result<Self, BloomError> {
        self.try_clone()
    }
    /// BF.INFO's five fields, then the window (ms) or -1.
    fn info(&self) -> Vec<i64> {
        // BF.CARD: items added (a windowed filter: within the live window).
        let items = self.live_items(if self.is_timed() { now_ms() } else { 0 });
        vec![
            self.capacity() as i64,
            self.mem_usage() as i64,
            self.link_count() as i64,
            items as i64,
            self.expansion().map_or(-1, i64::from),
            self.window_ms().map_or(-1, |ms| ms as i64),
        ]
    }
    fn error_rate_of(&self) -> f64 {
        self.error_rate()
    }
    fn check_limits(
        &self,
        max_bytes: jlong,
        max_links: jint,
    ) -> std::result::Result<(), BloomError> {
        let d = SERVER_DEFAULT_LIMITS;
        let limits = Limits {
            max_bytes: u64::try_from(max_bytes).unwrap_or(d.max_bytes),
            max_links: u32::try_from(max_links).unwrap_or(d.max_links),
            max_filters: d.max_filters,
        };
        BloomFilter::header_link_bytes(&self.encode_header(), &limits, None).map(|_| ())
    }
}

impl JavaKind for CuckooFilter {
    type Refusal = CuckooError;

    fn reserve(args: &[&[u8]]) -> std::result::Result<Self, e::CmdError> {
        create::reserve_cuckoo(args)
    }
    fn text(op: Op, err: &CuckooError) -> String {
        e::cuckoo(op, err).text().to_string()
    }
    fn out_of_memory(err: &CuckooError) -> bool {
        *err == CuckooError::AllocFailed
    }
    fn code(r: &std::result::Result<bool, CuckooError>) -> i8 {
        match r {
            Ok(b) => i8::from(*b),
            Err(CuckooError::Full) => 2,
            Err(CuckooError::MaxExpansions) => 3,
            Err(CuckooError::MemoryCap) => 4,
            Err(CuckooError::AllocFailed) => 5,
            Err(_) => 6,
        }
    }
    fn of_code(c: jint) -> CuckooError {
        match c {
            2 => CuckooError::Full,
            3 => CuckooError::MaxExpansions,
            4 => CuckooError::MemoryCap,
            5 => CuckooError::AllocFailed,
            _ => CuckooError::InvalidParams("?"),
        }
    }
    fn copy(&self) -> std::result::Result<Self, CuckooError> {
        self.try_clone(u64::MAX)
    }
    /// CF.INFO's eight fields, then the fingerprint bits and the layout (1:
    /// RedisBloom's).
    fn info(&self) -> Vec<i64> {
        vec![
            self.mem_usage() as i64,
            self.base_buckets() as i64,
            self.num_filters() as i64,
            self.num_items() as i64,
            self.num_deletes() as i64,
            self.bucket_size() as i64,
            self.expansion() as i64,
            self.max_iterations() as i64,
            i64::from(self.fp_bits()),
            i64::from(self.is_redisbloom()),
        ]
    }
    fn error_rate_of(&self) -> f64 {
        self.error_rate().unwrap_or(f64::NAN)
    }
    fn check_limits(
        &self,
        max_bytes: jlong,
        max_filters: jint,
    ) -> std::result::Result<(), CuckooError> {
        let d = SERVER_DEFAULT_LIMITS;
        CuckooFilter::header_table_bytes(
            &self.encode_header(),
            u64::try_from(max_bytes).unwrap_or(d.max_bytes),
            u32::try_from(max_filters).unwrap_or(d.max_filters),
            None,
        )
        .map(|_| ())
    }
}

/// Runs `$body` with `$t` the filter type of the Java kind code `$kind`
/// (`Native.BLOOM`, `Native.CUCKOO`); another code is an
/// `IllegalArgumentException`.
macro_rules! by_kind {
    ($kind:expr, $t:ident => $body:expr) => {
        match $kind {
            $crate::BLOOM => {
                type $t = ::ferrobloom_core::filter::BloomFilter;
                $body
            }
            $crate::CUCKOO => {
                type $t = ::ferrobloom_core::cuckoo::CuckooFilter;
                $body
            }
            k => Err($crate::bad_kind(k)),
        }
    };
}
pub(crate) use by_kind;

// The entry points' bodies both kinds share.

/// `RESERVE`: a new filter's handle.
pub(crate) fn reserve<T: JavaKind>(env: &mut JNIEnv<'_>, args: &JObjectArray<'_>) -> Result<jlong> {
    let args = byte_arrays(env, args)?;
    let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
    let f = T::reserve(&refs).map_err(|c| Error::Filter(c.text().to_string()))?;
    Ok(new_handle(f))
}

/// A deep copy's handle.
pub(crate) fn copy<T: JavaKind>(h: jlong) -> Result<jlong> {
    let c = slot::<T>(h)?.with(|f| f.copy().map_err(|err| refused::<T>(Op::Create, &err)))?;
    Ok(new_handle(c))
}

/// The text of an insert refusal's code.
pub(crate) fn insert_error_text<T: JavaKind>(code: jint) -> String {
    T::text(Op::Insert, &T::of_code(code))
}

pub(crate) fn info<T: JavaKind>(h: jlong) -> Result<Vec<i64>> {
    slot::<T>(h)?.with(|f| Ok(f.info()))
}

pub(crate) fn error_rate<T: JavaKind>(h: jlong) -> Result<f64> {
    slot::<T>(h)?.with(|f| Ok(f.error_rate_of()))
}

pub(crate) fn check_limits<T: JavaKind>(h: jlong, max_bytes: jlong, max_parts: jint) -> Result<()> {
    slot::<T>(h)?.with(|f| {
        f.check_limits(max_bytes, max_parts)
            .map_err(|err| refused::<T>(Op::Insert, &err))
    })
}

// The hot paths' plumbing: one JNI call per item or per batch.

/// An entry point on one item of filter `h`: `body` runs on the filter's
/// slot and the item's bytes (copied out of the Java array first, onto the
/// stack when short; the filter is locked by `body`, after the copy).
pub(crate) fn on_item<'l, T, R>(
    env: &mut JNIEnv<'l>,
    default: R,
    h: jlong,
    item: &JByteArray<'l>,
    body: impl FnOnce(&Slot<T>, &[u8]) -> Result<R>,
) -> R {
    guard(env, default, |env| {
        let s = slot::<T>(h)?;
        with_item(env, item, |i| body(s, i))
    })
}

/// An entry point on a batch of items of filter `h` (`buf`, `ends`, `count`
/// as `Items.Batch` packs them): `body` runs on the filter's slot and the
/// thread's scratch holding the items, copied out of the Java arrays first,
/// and returns the Java array of answers.
pub(crate) fn on_batch<'l, T>(
    env: &mut JNIEnv<'l>,
    h: jlong,
    buf: &JByteArray<'l>,
    ends: &JIntArray<'l>,
    count: jint,
    body: impl FnOnce(&mut JNIEnv<'l>, &Slot<T>, &mut Scratch) -> Result<JObject<'l>>,
) -> jobject {
    guard(env, std::ptr::null_mut(), |env| {
        with_scratch(|sc| {
            sc.items.fill(env, buf, ends, count)?;
            let s = slot::<T>(h)?;
            Ok(body(env, s, sc)?.into_raw())
        })
    })
}

/// A batch add's results as the `byte[]` of [`JavaKind::code`]s.
pub(crate) fn codes<'l, T: JavaKind>(
    env: &JNIEnv<'l>,
    out: &[std::result::Result<bool, T::Refusal>],
) -> Result<JObject<'l>> {
    let codes: Vec<i8> = out.iter().map(T::code).collect();
    let n = jint::try_from(codes.len()).map_err(|_| Error::Argument("batch too large".into()))?;
    let a = env.new_byte_array(n)?;
    env.set_byte_array_region(&a, 0, &codes)?;
    Ok(a.into())
}
