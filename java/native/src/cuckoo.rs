//! `io.ferrobloom.CuckooFilter`'s native calls: a `CF.*` filter in-process.
//! The calls of the Python package's `CuckooFilter` (`python/src/cuckoo.rs`):
//! creation by `create::reserve_cuckoo`, batches by `cuckoo_insert_items` /
//! `contains_items`.

use jni::objects::{JByteArray, JClass, JIntArray};
use jni::sys::{jboolean, jbooleanArray, jbyteArray, jint, jlong};
use jni::JNIEnv;

use ferrobloom_cmd::errors::{self as e, Op};
use ferrobloom_core::api::{cuckoo_insert_items, SERVER_DEFAULT_LIMITS};
use ferrobloom_core::cuckoo::CuckooFilter as Core;

use crate::booleans;
use crate::error::{Error, Result};
use crate::ffi::Slot;
use crate::kind::{codes, on_batch, on_item, refused};

/// RedisBloom's per-command check kept for filters of its layout
/// (`check_expansions` in `crates/ferrobloom/src/redis/cf.rs`).
fn check_expansions(f: &Core) -> Result<()> {
    if f.is_redisbloom() && f.num_filters() as u64 >= u64::from(SERVER_DEFAULT_LIMITS.max_filters) {
        return Err(Error::Filter(e::CF_MAX_EXPANSIONS.to_string()));
    }
    Ok(())
}

// The hot calls: one JNI call per item, or per batch of `Items.Batch`.

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfAdd<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
    nx: jboolean,
) -> jboolean {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        let l = SERVER_DEFAULT_LIMITS;
        s.with_mut(|f| {
            check_expansions(f)?;
            let hash = f.hash(item);
            if nx != 0 {
                f.insert_unique(&hash, l.max_filters, l.max_bytes)
            } else {
                f.insert(&hash, l.max_filters, l.max_bytes).map(|()| true)
            }
            .map(jboolean::from)
            .map_err(|err| refused::<Core>(Op::Insert, &err))
        })
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
    on_batch(
        &mut env,
        h,
        &buf,
        &ends,
        count,
        |env, s: &Slot<Core>, sc| {
            let out = s.with_mut(|f| {
                check_expansions(f)?;
                Ok(cuckoo_insert_items(
                    f,
                    sc.items.iter(),
                    nx != 0,
                    &SERVER_DEFAULT_LIMITS,
                ))
            })?;
            codes::<Core>(env, &out)
        },
    )
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfContains<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        s.with(|f| Ok(jboolean::from(f.contains(&f.hash(item)))))
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
    on_batch(
        &mut env,
        h,
        &buf,
        &ends,
        count,
        |env, s: &Slot<Core>, sc| {
            let out = s.with(|f| Ok(f.contains_items(sc.items.iter())))?;
            debug_assert_eq!(out.len(), sc.items.len());
            booleans(env, &out)
        },
    )
}

// What only a cuckoo filter has.

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfCount<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jlong {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        s.with(|f| Ok(f.count(&f.hash(item)) as jlong))
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_cfDelete<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    h: jlong,
    item: JByteArray<'l>,
) -> jboolean {
    on_item(&mut env, 0, h, &item, |s: &Slot<Core>, item| {
        s.with_mut(|f| {
            let hash = f.hash(item);
            Ok(jboolean::from(f.delete(&hash)))
        })
    })
}
