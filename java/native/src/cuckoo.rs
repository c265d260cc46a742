//! `io.ferrobloom.CuckooFilter`'s native calls: a `CF.*` filter in-process.
//! The calls of the Python package's `CuckooFilter` (`python/src/cuckoo.rs`):
//! creation by `create::reserve_cuckoo`, batches by `cuckoo_insert_items` /
//! `contains_items`.

use jni::objects::{JByteArray, JClass, JIntArray, JObjectArray};
use jni::sys::{jboolean, jbooleanArray, jbyteArray, jdouble, jint, jlong, jlongArray};
use jni::JNIEnv;

use ferrobloom_cmd::create;
use ferrobloom_cmd::errors::{self as e, Op};
use ferrobloom_core::api::{cuckoo_insert_items, SERVER_DEFAULT_LIMITS};
use ferrobloom_core::cuckoo::{CuckooError, CuckooFilter as Core};

use crate::error::{guard, Error, Result};
use crate::ffi::{new_handle, slot};
use crate::{booleans, byte_arrays, longs, with_item, Items};

/// The exception for an item that found no room, with the server's text.
fn insert_error(err: &CuckooError) -> Error {
    let text = e::cuckoo(Op::Insert, err).text().to_string();
    match err {
        CuckooError::AllocFailed => Error::OutOfMemory(text),
        _ => Error::Filter(text),
    }
}

/// RedisBloom's per-command check kept for filters of its layout
/// (`check_expansions` in `crates/ferrobloom/src/redis/cf.rs`).
fn check_expansions(f: &Core) -> Result<()> {
    if f.is_redisbloom() && f.num_filters() as u64 >= u64::from(SERVER_DEFAULT_LIMITS.max_filters) {
        return Err(Error::Filter(e::CF_MAX_EXPANSIONS.to_string()));
    }
    Ok(())
}

/// A `CF.INSERT` element for Java: 0 present (NX), 1 added, 2 and up no
/// room (`cfInsertErrorText` gives the text).
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

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfReserve<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    args: JObjectArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let args = byte_arrays(env, &args)?;
        let refs: Vec<&[u8]> = args.iter().map(|a| &a[..]).collect();
        let f = create::reserve_cuckoo(&refs).map_err(|c| Error::Filter(c.text().to_string()))?;
        Ok(new_handle(f))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfAdd<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
    nx: jboolean,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let l = SERVER_DEFAULT_LIMITS;
        let s = slot::<Core>(h)?;
        let added = with_item(env, &item, |item| {
            s.with_mut(|f| {
                check_expansions(f)?;
                let hash = f.hash(item);
                if nx != 0 {
                    f.insert_unique(&hash, l.max_filters, l.max_bytes)
                } else {
                    f.insert(&hash, l.max_filters, l.max_bytes).map(|()| true)
                }
                .map_err(|err| insert_error(&err))
            })
        })?;
        Ok(jboolean::from(added))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfInsert<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    ends: JIntArray<'l>,
    count: jint,
    nx: jboolean,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let items = Items::from_java(env, &buf, &ends, count)?;
        let out = slot::<Core>(h)?.with_mut(|f| {
            check_expansions(f)?;
            Ok(cuckoo_insert_items(
                f,
                items.iter(),
                nx != 0,
                &SERVER_DEFAULT_LIMITS,
            ))
        })?;
        let codes: Vec<i8> = out.iter().map(code).collect();
        let a = env.new_byte_array(codes.len() as jint)?;
        env.set_byte_array_region(&a, 0, &codes)?;
        Ok(a.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfInsertErrorText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    code: jint,
) -> jni::sys::jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let text = e::cuckoo(Op::Insert, &of_code(code)).text().to_string();
        Ok(env.new_string(text)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfContains<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let s = slot::<Core>(h)?;
        let found = with_item(env, &item, |item| s.with(|f| Ok(f.contains(&f.hash(item)))))?;
        Ok(jboolean::from(found))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfContainsAll<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    buf: JByteArray<'l>,
    ends: JIntArray<'l>,
    count: jint,
) -> jbooleanArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let items = Items::from_java(env, &buf, &ends, count)?;
        let out = slot::<Core>(h)?.with(|f| Ok(f.contains_items(items.iter())))?;
        debug_assert_eq!(out.len(), items.len());
        Ok(booleans(env, &out)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let s = slot::<Core>(h)?;
        with_item(env, &item, |item| {
            s.with(|f| Ok(f.count(&f.hash(item)) as jlong))
        })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfDelete<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    guard(&mut env, 0, |env| {
        let s = slot::<Core>(h)?;
        let gone = with_item(env, &item, |item| {
            s.with_mut(|f| {
                let hash = f.hash(item);
                Ok(f.delete(&hash))
            })
        })?;
        Ok(jboolean::from(gone))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfInfo<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        // CF.INFO's eight fields, then the fingerprint bits and the layout
        // (1: RedisBloom's).
        let v = slot::<Core>(h)?.with(|f| {
            Ok([
                f.mem_usage() as i64,
                f.base_buckets() as i64,
                f.num_filters() as i64,
                f.num_items() as i64,
                f.num_deletes() as i64,
                f.bucket_size() as i64,
                f.expansion() as i64,
                f.max_iterations() as i64,
                i64::from(f.fp_bits()),
                i64::from(f.is_redisbloom()),
            ])
        })?;
        Ok(longs(env, &v)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfErrorRate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jdouble {
    // NaN: no error rate was given (8-bit fingerprints).
    guard(&mut env, f64::NAN, |_| {
        slot::<Core>(h)?.with(|f| Ok(f.error_rate().unwrap_or(f64::NAN)))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfCopy<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
) -> jlong {
    guard(&mut env, 0, |_| {
        let c = slot::<Core>(h)?.with(|f| {
            f.try_clone(u64::MAX).map_err(|err| {
                let text = e::cuckoo(Op::Create, &err).text().to_string();
                match err {
                    CuckooError::AllocFailed => Error::OutOfMemory(text),
                    _ => Error::Filter(text),
                }
            })
        })?;
        Ok(new_handle(c))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfCheckLimits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    max_bytes: jlong,
    max_filters: jint,
) {
    guard(&mut env, (), |_| {
        let d = SERVER_DEFAULT_LIMITS;
        slot::<Core>(h)?.with(|f| {
            Core::header_table_bytes(
                &f.encode_header(),
                u64::try_from(max_bytes).unwrap_or(d.max_bytes),
                u32::try_from(max_filters).unwrap_or(d.max_filters),
                None,
            )
            .map(|_| ())
            .map_err(|err| insert_error(&err))
        })
    })
}
