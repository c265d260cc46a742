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
//! the JVM. Handles and their lifetime: `ffi.rs`. The binding never waits for
//! a filter's lock while it holds a Java array pinned, and never calls Java
//! code while it holds a filter's lock.

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObject, JObjectArray};
use jni::sys::{jbyteArray, jint, jlong};
use jni::JNIEnv;

use ferrobloom_core::api::{load_chunks, Kind, Scandump, LOAD_LIMITS};
use ferrobloom_core::cuckoo::CuckooFilter;
use ferrobloom_core::file::{self, AnyFilter};
use ferrobloom_core::filter::BloomFilter;

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
mod pull;
mod stream;

use error::{guard, Error, Result};

/// Zeroed allocations (every filter's bits) are lazily zeroed pages.
#[global_allocator]
static ALLOC: alloc::LazyZeroed = alloc::LazyZeroed;
use ffi::{new_handle, slot};

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
    let n = usize::try_from(env.get_array_length(a)?).unwrap_or(0);
    let mut stack = [0u8; 256];
    match stack.get_mut(..n) {
        Some(buf) => {
            env.get_byte_array_region(a, 0, ffi::as_jbytes_mut(buf))?;
            f(buf)
        }
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

/// The filter file of a filter, or an error Java can act on.
fn file_of<T: Scandump>(h: jlong) -> Result<Vec<u8>> {
    slot::<T>(h)?.with(|f| {
        let mut out = Vec::new();
        file::write(f, &mut out).map_err(|why| {
            if why == "out of memory" {
                Error::OutOfMemory(format!("ERR {why} writing the filter's file"))
            } else {
                Error::Filter(format!("ERR {why}"))
            }
        })?;
        Ok(out)
    })
}

fn file_of_kind(kind: jint, h: jlong) -> Result<Vec<u8>> {
    match kind {
        BLOOM => file_of::<BloomFilter>(h),
        CUCKOO => file_of::<CuckooFilter>(h),
        k => Err(bad_kind(k)),
    }
}

/// A loaded filter as a handle, its kind written to `kind_out[0]`.
pub(crate) fn handle_of(
    env: &JNIEnv<'_>,
    kind: jint,
    f: AnyFilter,
    kind_out: &JIntArray<'_>,
) -> Result<jlong> {
    let (k, h) = match f {
        AnyFilter::Bloom(f) => (BLOOM, new_handle(f)),
        AnyFilter::Cuckoo(f) => (CUCKOO, new_handle(f)),
    };
    if !kind_out.is_null() {
        env.set_int_array_region(kind_out, 0, &[k])?;
    }
    debug_assert!(kind == 0 || kind == k);
    Ok(h)
}

/// Reads a file of `kind` (0: either) through `read` (over bytes or a stream).
fn load_file(
    kind: jint,
    bloom: impl FnOnce() -> std::result::Result<BloomFilter, String>,
    cuckoo: impl FnOnce() -> std::result::Result<CuckooFilter, String>,
    any: impl FnOnce() -> std::result::Result<AnyFilter, String>,
) -> Result<AnyFilter> {
    match kind {
        0 => any().map_err(Error::Format),
        BLOOM => bloom().map(AnyFilter::Bloom).map_err(Error::Format),
        CUCKOO => cuckoo().map(AnyFilter::Cuckoo).map_err(Error::Format),
        k => Err(bad_kind(k)),
    }
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_close(
    mut env: JNIEnv<'_>,
    _: JClass<'_>,
    kind: jint,
    h: jlong,
) {
    guard(&mut env, (), |_| {
        match kind {
            BLOOM => slot::<BloomFilter>(h)?.close(),
            CUCKOO => slot::<CuckooFilter>(h)?.close(),
            k => return Err(bad_kind(k)),
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_free(
    mut env: JNIEnv<'_>,
    _: JClass<'_>,
    kind: jint,
    h: jlong,
) {
    guard(&mut env, (), |_| {
        match kind {
            BLOOM => ffi::free::<BloomFilter>(h),
            CUCKOO => ffi::free::<CuckooFilter>(h),
            k => return Err(bad_kind(k)),
        }
        Ok(())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_toBytes<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let out = file_of_kind(kind, h)?;
        if out.len() > (i32::MAX - 8) as usize {
            return Err(Error::Filter(format!(
                "ERR the filter's file ({} bytes) is larger than a Java array: use writeTo",
                out.len()
            )));
        }
        Ok(env.byte_array_from_slice(&out)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_writeTo<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
    out: JObject<'l>,
) {
    guard(&mut env, (), |env| {
        if out.is_null() {
            return Err(Error::Null("out"));
        }
        // The file is made under the filter's read lock, then written with
        // the lock released (no Java code runs under a filter's lock).
        let bytes = file_of_kind(kind, h)?;
        stream::write_all(env, &out, &bytes)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_fromBytes<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    data: JByteArray<'l>,
    kind_out: JIntArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        let b = bytes(env, &data)?;
        let f = load_file(
            kind,
            || file::read(&b, &LOAD_LIMITS),
            || file::read(&b, &LOAD_LIMITS),
            || file::read_any(&b, &LOAD_LIMITS),
        )?;
        handle_of(env, kind, f, &kind_out)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_readFrom<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    input: JObject<'l>,
    len: jlong,
    kind_out: JIntArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        if input.is_null() {
            return Err(Error::Null("in"));
        }
        let len = u64::try_from(len).ok();
        let f = stream::read(env, &input, |mut r| match kind {
            0 => file::read_any_from(&mut r, len, &LOAD_LIMITS).map_err(Error::Format),
            BLOOM => file::read_from(&mut r, len, &LOAD_LIMITS)
                .map(AnyFilter::Bloom)
                .map_err(Error::Format),
            CUCKOO => file::read_from(&mut r, len, &LOAD_LIMITS)
                .map(AnyFilter::Cuckoo)
                .map_err(Error::Format),
            k => Err(bad_kind(k)),
        })?;
        handle_of(env, kind, f, &kind_out)
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_fileKind<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    data: JByteArray<'l>,
) -> jint {
    guard(&mut env, 0, |env| {
        let b = bytes(env, &data)?;
        file::parse(&b)
            .map(|p| p.kind as jint)
            .map_err(Error::Format)
    })
}

fn scandump_of<T: Scandump>(h: jlong, iter: i64) -> Result<(i64, Vec<u8>)> {
    slot::<T>(h)?.with(|f| {
        Ok(match f.scandump(iter) {
            Some((n, d)) => (n, d.into_owned()),
            None => (0, Vec::new()),
        })
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_scandump<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
    iter: jlong,
    next: JLongArray<'l>,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        let (n, d) = match kind {
            BLOOM => scandump_of::<BloomFilter>(h, iter)?,
            CUCKOO => scandump_of::<CuckooFilter>(h, iter)?,
            k => return Err(bad_kind(k)),
        };
        env.set_long_array_region(&next, 0, &[n])?;
        Ok(env.byte_array_from_slice(&d)?.into_raw())
    })
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_fromChunks<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    iters: JLongArray<'l>,
    datas: JObjectArray<'l>,
) -> jlong {
    guard(&mut env, 0, |env| {
        if iters.is_null() {
            return Err(Error::Null("iterators"));
        }
        let datas = byte_arrays(env, &datas)?;
        let mut its = vec![0; datas.len()];
        if env.get_array_length(&iters)? as usize != datas.len() {
            return Err(Error::Argument("one iterator per chunk".into()));
        }
        env.get_long_array_region(&iters, 0, &mut its)?;
        let chunks: Vec<(i64, &[u8])> = its.iter().zip(&datas).map(|(i, d)| (*i, &d[..])).collect();
        match kind {
            BLOOM => load_chunks::<BloomFilter>(&chunks, &LOAD_LIMITS)
                .map(new_handle)
                .map_err(Error::Format),
            CUCKOO => load_chunks::<CuckooFilter>(&chunks, &LOAD_LIMITS)
                .map(new_handle)
                .map_err(Error::Format),
            k => Err(bad_kind(k)),
        }
    })
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
        slot::<BloomFilter>(h)?
            .with_mut(|_| -> Result<()> { panic!("a deliberate panic (fault injection)") })
    })
}
