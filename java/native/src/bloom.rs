//! `io.ferrobloom.BloomFilter`'s native calls: a `BF.*` filter in-process.
//! The calls of the Python package's `BloomFilter` (`python/src/bloom.rs`):
//! creation by `create::reserve_bloom`, batches by `add_hashes` /
//! `contains_hashes`, merges by `BloomFilter::merged` / `merge_from`.

use std::sync::RwLockReadGuard;

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObjectArray};
use jni::sys::{jboolean, jbooleanArray, jbyteArray, jdouble, jint, jlong, jlongArray, jstring};
use jni::JNIEnv;

use ferrobloom_cmd::create;
use ferrobloom_cmd::errors::{self as e, Op};
use ferrobloom_core::api::SERVER_DEFAULT_LIMITS;
use ferrobloom_core::bloom::{BloomError, Limits, PREFETCH_ONE_FROM};
use ferrobloom_core::filter::BloomFilter as Core;
use ferrobloom_core::hash::ItemHash;

use crate::error::{guard, Error, Result};
use crate::ffi::{new_handle, slot, Slot};
use crate::{booleans, byte_arrays, longs, now_ms, with_item, Items};

/// The exception for an item the filter refused, with the server's text
/// (`BF.ADD` / `BF.MADD`'s error reply).
fn insert_error(err: &BloomError) -> Error {
    let text = e::bloom(Op::Insert, err).text().to_string();
    match err {
        BloomError::AllocFailed => Error::OutOfMemory(text),
        _ => Error::Filter(text),
    }
}

/// A `BF.MADD` element for Java: 0 not new, 1 new, 2 and up a refusal
/// (`bfInsertErrorText` gives its text).
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

/// The items' hashes, computed without the filter's lock (the hashing is
/// fixed for the filter's life).
fn hashes(s: &Slot<Core>, items: &Items) -> Result<Vec<ItemHash>> {
    let scheme = s.with(|f| Ok(f.scheme()))?;
    Ok(items.iter().map(|i| scheme.bloom(i)).collect())
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfReserve<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    args: JObjectArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let args = byte_arrays(env, &args)?;
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let f = create::reserve_bloom(&refs).map_err(|c| Error::Filter(c.text().to_string()))?;
        Ok(new_handle(f))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfDefaultErrorRate<'l>(
    _env: JNIEnv<'l>,
    _: JClass<'l>,
) -> jdouble {
    ferrobloom_cmd::defaults::BLOOM.error
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfAdd<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let s = slot::<Core>(h)?;
        let added = with_item(env, &item, |item| {
            s.with_mut(|f| {
                // The clock is read for windowed filters only.
                let now = if f.is_timed() { now_ms() } else { 0 };
                let h = hash_one(f, item);
                f.add_hashed_item(&h, now, &SERVER_DEFAULT_LIMITS)
                    .map_err(|err| insert_error(&err))
            })
        })?;
        Ok(jboolean::from(added))
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
    guard(&mut env, std::ptr::null_mut(), |env| {
        let items = Items::from_java(env, &buf, &ends, count)?;
        let s = slot::<Core>(h)?;
        let hs = hashes(s, &items)?;
        let now = now_ms();
        let out = s.with_mut(|f| {
            let mut out = Vec::with_capacity(hs.len());
            f.add_hashes(&hs, now, &SERVER_DEFAULT_LIMITS, &mut out);
            Ok(out)
        })?;
        let codes: Vec<i8> = out.iter().map(code).collect();
        let a = env.new_byte_array(codes.len() as jint)?;
        env.set_byte_array_region(&a, 0, &codes)?;
        Ok(a.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfInsertErrorText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    code: jint,
) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let text = e::bloom(Op::Insert, &of_code(code)).text().to_string();
        Ok(env.new_string(text)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfContains<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
    at_ms: jlong,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let s = slot::<Core>(h)?;
        let found = with_item(env, &item, |item| {
            s.with(|f| {
                let now = if f.is_timed() { at(at_ms) } else { 0 };
                Ok(f.contains_hash(&hash_one(f, item), now))
            })
        })?;
        Ok(jboolean::from(found))
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
    guard(&mut env, std::ptr::null_mut(), |env| {
        let items = Items::from_java(env, &buf, &ends, count)?;
        let s = slot::<Core>(h)?;
        let hs = hashes(s, &items)?;
        let now = at(at_ms);
        let out = s.with(|f| {
            let mut out = Vec::with_capacity(hs.len());
            f.contains_hashes(&hs, now, &mut out);
            Ok(out)
        })?;
        Ok(booleans(env, &out)?.into_raw())
    })
}

/// `BF.CARD`: items added (a windowed filter: within the live window).
fn items_of(f: &Core) -> u64 {
    f.live_items(if f.is_timed() { now_ms() } else { 0 })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfInfo<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        // BF.INFO's five fields, then the window (ms) or -1.
        let v = slot::<Core>(h)?.with(|f| {
            Ok([
                f.capacity() as i64,
                f.mem_usage() as i64,
                f.link_count() as i64,
                items_of(f) as i64,
                f.expansion().map_or(-1, i64::from),
                f.window_ms().map_or(-1, |ms| ms as i64),
            ])
        })?;
        Ok(longs(env, &v)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfErrorRate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jdouble {
    guard(&mut env, 0.0, |_| {
        slot::<Core>(h)?.with(|f| Ok(f.error_rate()))
    })
}

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

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfCopy<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jlong {
    guard(&mut env, 0, |_| {
        let c = slot::<Core>(h)?.with(|f| {
            f.try_clone().map_err(|err| match err {
                BloomError::AllocFailed => {
                    Error::OutOfMemory(e::bloom(Op::Create, &err).text().to_string())
                }
                _ => Error::Filter(e::bloom(Op::Create, &err).text().to_string()),
            })
        })?;
        Ok(new_handle(c))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_bfCheckLimits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    max_bytes: jlong,
    max_links: jint,
) {
    guard(&mut env, (), |_| {
        let d = SERVER_DEFAULT_LIMITS;
        let limits = Limits {
            max_bytes: u64::try_from(max_bytes).unwrap_or(d.max_bytes),
            max_links: u32::try_from(max_links).unwrap_or(d.max_links),
            max_filters: d.max_filters,
        };
        slot::<Core>(h)?.with(|f| {
            Core::header_link_bytes(&f.encode_header(), &limits, None)
                .map(|_| ())
                .map_err(|err| insert_error(&err))
        })
    })
}
