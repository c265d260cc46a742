//! What `Pull.java` needs of the core: the bound of a server's SCANDUMP walk
//! (`WalkBudget`) and the decoding of a `DUMP` reply (`restore::read_dump`).
//! The protocol itself (TYPE, the STAMP walk, DUMP on a server without
//! stamps) is Java's, over the client adapters; no decoding happens here.

use jni::objects::{JByteArray, JClass, JIntArray};
use jni::sys::{jint, jlong, jlongArray};
use jni::JNIEnv;

use ferrobloom_core::api::{WalkBudget, LOAD_LIMITS};
use ferrobloom_core::restore::read_dump;

use crate::error::{guard, Error};
use crate::files::handle_of;
use crate::kind::by_kind;
use crate::{bytes, longs};

/// `{chunks, bytes}` a SCANDUMP walk of a filter of `kind` may return after
/// `header`, its first reply; `FormatException` for a header that does not
/// load (`ferrobloom_core::api::WalkBudget`).
#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_walkBudget<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    header: JByteArray<'l>,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let h = bytes(env, &header)?;
        let b = by_kind!(kind, T => WalkBudget::of::<T>(&h).map_err(Error::Format))?;
        let v = [
            i64::try_from(b.chunks).unwrap_or(i64::MAX),
            i64::try_from(b.bytes).unwrap_or(i64::MAX),
        ];
        Ok(longs(env, &v)?.into_raw())
    })
}

/// A filter of either kind from a server's `DUMP` reply of a filter key
/// (RedisBloom's RDB encodings 0-4, ferrobloom's 5-6; LZF, CRC-64 checked),
/// its kind written to `kind_out[0]`; `FormatException` for a payload that
/// is not one.
#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_fromDump<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    payload: JByteArray<'l>,
    kind_out: JIntArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let p = bytes(env, &payload)?;
        let f = read_dump(&p, &LOAD_LIMITS).map_err(Error::Format)?;
        handle_of(env, 0, f, &kind_out)
    })
}
