//! `io.ferrobloom.BloomFilter`'s native calls: a `BF.*` filter in-process.
//! The calls of the Python package's `BloomFilter` (`python/src/bloom.rs`):
//! creation by `create::reserve_bloom`, batches by `add_hashes` /
//! `contains_hashes`, merges by `BloomFilter::merged` / `merge_from`.

use std::sync::RwLockReadGuard;

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray};
use jni::sys::{jboolean, jbooleanArray, jbyteArray, jdouble, jint, jlong, jstring};
use jni::JNIEnv;

use ferrobloom_cmd::errors as e;
use ferrobloom_core::api::SERVER_DEFAULT_LIMITS;
use ferrobloom_core::bloom::PREFETCH_ONE_FROM;
use ferrobloom_core::filter::BloomFilter as Core;
use ferrobloom_core::hash::ItemHash;

use crate::error::{guard, Error, Result};
use crate::ffi::{new_handle, slot, Slot};
use crate::kind::{codes, on_batch, on_item, refused};
use crate::{booleans, now_ms, Scratch};

/// A time in milliseconds since the epoch from Java (negative: now).
fn at(ms: jlong) -> u64 {
    u64::try_from(ms).unwrap_or_else(|_| now_ms())
}

/// An item's hash, with the lines it reads prefetched first in a filter of
/// [`PREFETCH_ONE_FROM`] bytes or more (a call on one item, as the Python
/// package's): the lines arrive together rather than one after the other.
#[inline]
fn hash_one(f: &Core, item: &[u8]) -> ItemHash {
    let h = f.hash(item);
    if f.mem_usage() >= PREFETCH_ONE_FROM {
        f.prefetch(&h);
    }
    h
}

/// The batch's hashes into the scratch, computed without the filter's lock
/// (the hashing is fixed for the filter's life).
fn hashes(s: &Slot<Core>, sc: &mut Scratch) -> Result<()> {
    let scheme = s.with(|f| Ok(f.scheme()))?;
    sc.hashes.clear();
    sc.hashes.extend(sc.items.iter().map(|i| scheme.bloom(i)));
    Ok(())
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfDefaultErrorRate<'l>(
    _env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jdouble {
    ferrobloom_cmd::defaults::BLOOM.error
}

// The hot calls: one JNI call per item, or per batch of `Items.Batch`.

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfAdd<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        s.with_mut(|f| {
            // The clock is read for windowed filters only.
            let now = if f.is_timed() { now_ms() } else { 0 };
            let h = hash_one(f, item);
            f.add_hashed_item(&h, now, &SERVER_DEFAULT_LIMITS)
                .map(jboolean::from)
                .map_err(|err| refused::<Core>(e::Op::Insert, &err))
        })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfAddAll<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    ends: JIntArray<'l>,
    count: jint,
) -> jbyteArray {
    on_batch(
        &mut env,
        h,
        &buf,
        &ends,
        count,
        |env, s: &Slot<Core>, sc| {
            hashes(s, sc)?;
            let now = now_ms();
            sc.added.clear();
            s.with_mut(|f| {
                f.add_hashes(&sc.hashes, now, &SERVER_DEFAULT_LIMITS, &mut sc.added);
                Ok(())
            })?;
            codes::<Core>(env, &sc.added)
        },
    )
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfContains<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
    at_ms: jlong,
) -> jboolean {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        s.with(|f| {
            let now = if f.is_timed() { at(at_ms) } else { 0 };
            Ok(jboolean::from(f.contains_hash(&hash_one(f, item), now)))
        })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfContainsAll<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    ends: JIntArray<'l>,
    count: jint,
    at_ms: jlong,
) -> jbooleanArray {
    on_batch(
        &mut env,
        h,
        &buf,
        &ends,
        count,
        |env, s: &Slot<Core>, sc| {
            hashes(s, sc)?;
            let now = at(at_ms);
            sc.found.clear();
            s.with(|f| {
                f.contains_hashes(&sc.hashes, now, &mut sc.found);
                Ok(())
            })?;
            booleans(env, &sc.found)
        },
    )
}

// What only a Bloom filter has.

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfLayout<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let name = slot::<Core>(h)?.with(|f| Ok(f.layout_name()))?;
        Ok(env.new_string(name)?.into_raw())
    })
}

fn merge_error(err: &ferrobloom_core::bloom::MergeError) -> Error {
    Error::Filter(e::merge(err, |i| i + 1).text().to_string())
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfUnion<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    handles: JLongArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        if handles.is_null() {
            return Err(Error::Null("filters"));
        }
        let mut hs = vec![0; env.get_array_length(&handles)? as usize];
        env.get_long_array_region(&handles, 0, &mut hs)?;
        let slots: Vec<&Slot<Core>> = hs.iter().map(|h| slot(*h)).collect::<Result<_>>()?;
        // Each filter locked once, however often it is given (BF.MERGE reads
        // a source given twice once), in address order (no lock-order cycle
        // with another thread's merge).
        let mut order: Vec<&Slot<Core>> = slots.clone();
        order.sort_by_key(|s| s.addr());
        order.dedup_by_key(|s| s.addr());
        let guards: Vec<(usize, RwLockReadGuard<'_, Option<Core>>)> =
            order.iter().map(|s| (s.addr(), s.read())).collect();
        let mut sources: Vec<&Core> = Vec::with_capacity(slots.len());
        for s in &slots {
            let g = guards
                .iter()
                .find(|(a, _)| *a == s.addr())
                .and_then(|(_, g)| g.as_ref())
                .ok_or(Error::Closed)?;
            sources.push(g);
        }
        let merged =
            Core::merged(&sources, &SERVER_DEFAULT_LIMITS).map_err(|err| merge_error(&err))?;
        drop(guards);
        Ok(new_handle(merged))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfMergeInto<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    dst: jlong,
    src: jlong,
) {
    guard(&mut env, (), |_| {
        let (d, s) = (slot::<Core>(dst)?, slot::<Core>(src)?);
        if d.addr() == s.addr() {
            // BF.MERGE f 1 f: the union of a filter with itself is itself.
            return d.with(|_| Ok(()));
        }
        // Locked in address order (no lock-order cycle with another merge).
        let (mut dg, sg) = if d.addr() < s.addr() {
            let dg = d.write();
            (dg, s.read())
        } else {
            let sg = s.read();
            (d.write(), sg)
        };
        let (Some(df), Some(sf)) = (dg.as_mut(), sg.as_ref()) else {
            return Err(Error::Closed);
        };
        df.merge_from(&[sf], &SERVER_DEFAULT_LIMITS)
            .map_err(|err| merge_error(&err))
    })
}
