//! `libferrobloom_jni.so`: the native part of the Java library (`java/`,
//! package `io.ferrobloom`). Its entry points are the static native methods of
//! `io.ferrobloom.Native`; the public classes `BloomFilter` and `CuckooFilter`
//! call them.
//!
//! No logic of its own: a filter is created by `ferrobloom_cmd::create` from
//! `BF.RESERVE` / `CF.RESERVE`'s arguments as a client sends them (the
//! server's defaults, limits and error texts), batches go through the core's
//! `api` (the calls the Python package makes), refusals take their text
//! from `ferrobloom_cmd::errors`, files are the core's `file` format, and a
//! pull's walk bound and `DUMP` decoding are the core's (`pull.rs`).
//!
//! Items arrive encoded by the Java side (bytes as they are, strings as UTF-8,
//! integers as their decimal text, as Jedis and Lettuce send them); a batch is
//! one byte array of the items back to back and an int array of where each
//! ends. Every entry point runs inside `error::guard`: a refusal becomes the
//! Java exception it names, a panic a `FilterException`; nothing unwinds into
//! the JVM. Handles and their lifetime: `ffi.rs`. What the two kinds answer
//! differently is written once per kind in `kind.rs` (`JavaKind`), and every
//! call both kinds make once over it: here (creation, copies, info, limits),
//! in `files.rs` (files and chunks), and the per-item and batch plumbing
//! `bloom.rs` and `cuckoo.rs` use for their own calls. The binding never waits for
//! a filter's lock while it holds a Java array pinned, and never calls Java
//! code while it holds a filter's lock.

use jni::objects::{JByteArray, JClass, JIntArray, JObject, JObjectArray};
use jni::sys::{jdouble, jint, jlong, jlongArray, jstring};
use jni::JNIEnv;

use ferrobloom_core::api::Kind;

// The Python package's allocator, shared rather than copied: the system
// allocator with zeroed blocks aligned above 16 bytes (a Bloom filter's 64-byte
// lines) served by `calloc`, so a filter's bits cost memory as they are
// written, as on the server (docs/design.md, "Crates and files").
#[path = "../../../python/src/alloc.rs"]
mod alloc;
mod bloom;
mod cuckoo;
mod error;
mod ffi;
mod files;
mod kind;
mod pull;
mod stream;

use error::{guard, Error, Result};
use kind::by_kind;

/// Zeroed allocations (every filter's bits) are lazily zeroed pages.
#[global_allocator]
static ALLOC: alloc::LazyZeroed = alloc::LazyZeroed;
use ffi::slot;

/// Milliseconds since the Unix epoch (windowed filters' clock, as the
/// server's): the core's, which its loaders anchor windowed filters to.
pub(crate) fn now_ms() -> u64 {
    ferrobloom_core::api::clock_ms()
}

/// A Java byte array's bytes (a copy; `NullPointerException` for null).
pub(crate) fn bytes(env: &JNIEnv<'_>, a: &JByteArray<'_>) -> Result<Vec<u8>> {
    if a.is_null() {
        return Err(Error::Null("item"));
    }
    Ok(env.convert_byte_array(a)?)
}

/// Runs `f` on an item's bytes, copied out of its Java array (onto the stack
/// when short: single-item calls allocate nothing).
pub(crate) fn with_item<R>(
    env: &JNIEnv<'_>,
    a: &JByteArray<'_>,
    f: impl FnOnce(&[u8]) -> Result<R>,
) -> Result<R> {
    if a.is_null() {
        return Err(Error::Null("item"));
    }
    let mut stack = [0u8; 256];
    let n = ffi::item_into(env, a, &mut stack)?;
    match stack.get(..n) {
        Some(buf) => f(buf),
        None => f(&env.convert_byte_array(a)?),
    }
}

/// A Java `byte[][]`'s arrays.
pub(crate) fn byte_arrays(env: &mut JNIEnv<'_>, a: &JObjectArray<'_>) -> Result<Vec<Vec<u8>>> {
    if a.is_null() {
        return Err(Error::Null("arguments"));
    }
    let n = env.get_array_length(a)?;
    let mut out = Vec::with_capacity(n as usize);
    for i in 0..n {
        let o = JByteArray::from(env.get_object_array_element(a, i)?);
        out.push(bytes(env, &o)?);
        env.delete_local_ref(o)?;
    }
    Ok(out)
}

/// A batch of items as the Java side packs it: item `i` is
/// `buf[ends[i-1]..ends[i]]` (`Batch.java`).
pub(crate) struct Items {
    buf: Vec<u8>,
    ends: Vec<usize>,
}

impl Items {
    pub(crate) fn from_java(
        env: &JNIEnv<'_>,
        buf: &JByteArray<'_>,
        ends: &JIntArray<'_>,
        count: jint,
    ) -> Result<Self> {
        let buf = bytes(env, buf)?;
        if ends.is_null() {
            return Err(Error::Null("ends"));
        }
        let len = env.get_array_length(ends)?;
        if count < 0 || count > len {
            return Err(Error::Argument(format!("bad item count {count}")));
        }
        let mut raw = vec![0; count as usize];
        env.get_int_array_region(ends, 0, &mut raw)?;
        let mut prev = 0usize;
        let mut out = Vec::with_capacity(raw.len());
        for e in raw {
            let e = usize::try_from(e).map_err(|_| Error::Argument("bad item end".into()))?;
            if e < prev || e > buf.len() {
                return Err(Error::Argument("bad item end".into()));
            }
            out.push(e);
            prev = e;
        }
        Ok(Items { buf, ends: out })
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let s = self.buf.get(start..end).unwrap_or_default();
            start = end;
            s
        })
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }
}

/// A `boolean[]` for Java.
pub(crate) fn booleans<'l>(env: &JNIEnv<'l>, v: &[bool]) -> Result<JObject<'l>> {
    let n = jint::try_from(v.len()).map_err(|_| Error::Argument("batch too large".into()))?;
    let a = env.new_boolean_array(n)?;
    let raw: Vec<u8> = v.iter().map(|&b| u8::from(b)).collect();
    env.set_boolean_array_region(&a, 0, &raw)?;
    Ok(a.into())
}

/// A `long[]` for Java.
pub(crate) fn longs<'l>(env: &JNIEnv<'l>, v: &[i64]) -> Result<JObject<'l>> {
    let a = env.new_long_array(v.len() as jint)?;
    env.set_long_array_region(&a, 0, v)?;
    Ok(a.into())
}

/// The kind codes Java passes (`Native.BLOOM`, `Native.CUCKOO`; 0: either).
pub(crate) const BLOOM: jint = Kind::Bloom as jint;
pub(crate) const CUCKOO: jint = Kind::Cuckoo as jint;

pub(crate) fn bad_kind(kind: jint) -> Error {
    Error::Argument(format!("bad filter kind {kind}"))
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_close(
    mut env: JNIEnv<'_>,
    _: JClass<'_>,
    kind: jint,
    h: jlong,
) {
    guard(
        &mut env,
        (),
        |_| by_kind!(kind, T => slot::<T>(h).map(|s| s.close())),
    )
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_free(
    mut env: JNIEnv<'_>,
    _: JClass<'_>,
    kind: jint,
    h: jlong,
) {
    guard(&mut env, (), |_| {
        by_kind!(kind, T => {
            ffi::free::<T>(h);
            Ok(())
        })
    })
}

// The calls both kinds share, on `kind::JavaKind`.

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_reserve<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    args: JObjectArray<'l>,
) -> jlong {
    guard(
        &mut env,
        0,
        |env| by_kind!(kind, T => kind::reserve::<T>(env, &args)),
    )
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_copy<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
) -> jlong {
    guard(&mut env, 0, |_| by_kind!(kind, T => kind::copy::<T>(h)))
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_insertErrorText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    code: jint,
) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let text = by_kind!(kind, T => Ok(kind::insert_error_text::<T>(code)))?;
        Ok(env.new_string(text)?.into_raw())
    })
}

/// The server's text for a missing key (0) and for a key of another type (1),
/// from the one home of the error texts (`ferrobloom_cmd::errors`).
#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_keyErrorText<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    which: jint,
) -> jstring {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let text = match which {
            0 => ferrobloom_cmd::errors::NOT_FOUND,
            1 => ferrobloom_cmd::errors::WRONG_TYPE,
            _ => return Err(Error::Argument(format!("no key error text {which}"))),
        };
        Ok(env.new_string(text)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_info<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
) -> jlongArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let v = by_kind!(kind, T => kind::info::<T>(h))?;
        Ok(longs(env, &v)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_errorRate<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
) -> jdouble {
    guard(
        &mut env,
        f64::NAN,
        |_| by_kind!(kind, T => kind::error_rate::<T>(h)),
    )
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_checkLimits<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
    max_bytes: jlong,
    max_parts: jint,
) {
    guard(
        &mut env,
        (),
        |_| by_kind!(kind, T => kind::check_limits::<T>(h, max_bytes, max_parts)),
    )
}

/// A deliberate panic inside a filter's write lock (test builds only): the
/// JVM gets a `FilterException`, and the filter stays usable.
#[cfg(feature = "fault-injection")]
#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_faultPanic(
    mut env: JNIEnv<'_>,
    _: JClass<'_>,
    h: jlong,
) {
    guard(&mut env, (), |_| {
        slot::<ferrobloom_core::filter::BloomFilter>(h)?
            .with_mut(|_| -> Result<()> { panic!("a deliberate panic (fault injection)") })
    })
}
