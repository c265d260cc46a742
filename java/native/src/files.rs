//! Files and chunks of both kinds: the core's file format (`ferrobloom_core::file`)
//! to and from bytes and Java streams (`stream.rs`), and `SCANDUMP`'s chunks.

use jni::objects::{JByteArray, JClass, JIntArray, JLongArray, JObject, JObjectArray};
use jni::sys::{jbyteArray, jint, jlong};
use jni::JNIEnv;

use ferrobloom_cmd::errors::Op;
use ferrobloom_core::api::{load_chunks, Scandump, LOAD_LIMITS};
use ferrobloom_core::file::{self, AnyFilter, Pieces};

use crate::error::{guard, Error, Result};
use crate::ffi::{as_jbytes, new_handle, slot};
use crate::kind::{by_kind, refused, JavaKind};
use crate::{bad_kind, byte_arrays, bytes, stream, BLOOM, CUCKOO};

/// Bytes of the file a write takes from the filter at a time (the filter's
/// lock is taken once per piece, and released while Java writes it).
const PIECE: usize = 1 << 20;

/// The file writer's refusal as the exception Java can act on.
fn file_error(why: String) -> Error {
    if why == file::OUT_OF_MEMORY {
        Error::OutOfMemory(format!("ERR {why} writing the filter's file"))
    } else {
        Error::Filter(format!("ERR {why}"))
    }
}

/// The copy a write makes for a dump under way (`ffi::Slot::dump`).
fn copy_for_dump<T: JavaKind>(f: &T) -> Result<T> {
    f.copy().map_err(|err| refused::<T>(Op::Create, &err))
}

/// Gives the file of filter `h`, as it is when this begins, to `sink` a
/// piece of about [`PIECE`] bytes at a time, with the file's length and the
/// piece's offset; `sink` runs with the filter's lock released (it may call
/// Java), and a write that comes meanwhile leaves the file as it began
/// (`ffi::Slot::dump`).
fn dump_file<T: JavaKind>(
    h: jlong,
    mut sink: impl FnMut(u64, u64, &[u8]) -> Result<()>,
) -> Result<()> {
    let dump = slot::<T>(h)?.dump(copy_for_dump::<T>)?;
    let mut pieces = dump.with(|f| Pieces::new(f).map_err(file_error))?;
    let (len, mut at) = (pieces.file_len(), 0u64);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let more = dump.with(|f| pieces.next(f, PIECE, &mut buf).map_err(file_error))?;
        sink(len, at, &buf)?;
        at += buf.len() as u64;
        if !more {
            return Ok(());
        }
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

/// A filter file's bytes: in memory, or a stream with its length when known.
trait FileInput {
    /// A file of kind `T` (a file of the other kind is refused by name).
    fn one<T: Scandump>(self) -> std::result::Result<T, String>;
    /// A file of either kind.
    fn any(self) -> std::result::Result<AnyFilter, String>;
}

impl FileInput for &[u8] {
    fn one<T: Scandump>(self) -> std::result::Result<T, String> {
        file::read(self, &LOAD_LIMITS)
    }
    fn any(self) -> std::result::Result<AnyFilter, String> {
        file::read_any(self, &LOAD_LIMITS)
    }
}

impl FileInput for (&mut dyn std::io::Read, Option<u64>) {
    fn one<T: Scandump>(self) -> std::result::Result<T, String> {
        let (mut r, len) = self;
        file::read_from(&mut r, len, &LOAD_LIMITS)
    }
    fn any(self) -> std::result::Result<AnyFilter, String> {
        let (mut r, len) = self;
        file::read_any_from(&mut r, len, &LOAD_LIMITS)
    }
}

/// Reads a file of `kind` (0: either).
fn load_file(kind: jint, input: impl FileInput) -> Result<AnyFilter> {
    match kind {
        0 => input.any(),
        BLOOM => input.one().map(AnyFilter::Bloom),
        CUCKOO => input.one().map(AnyFilter::Cuckoo),
        k => return Err(bad_kind(k)),
    }
    .map_err(Error::Format)
}

#[no_mangle]
pub extern "system" fn Java_io_ferrobloom_Native_toBytes<'l>(
    mut env: JNIEnv<'l>,
    _: JClass<'l>,
    kind: jint,
    h: jlong,
) -> jbyteArray {
    guard(&mut env, std::ptr::null_mut(), |env| {
        // The array is allocated once the file's length is known, and each
        // piece copied into it as it is made.
        let mut array: Option<JByteArray<'_>> = None;
        by_kind!(kind, T => dump_file::<T>(h, |len, at, piece| {
            if array.is_none() {
                if len > (i32::MAX - 8) as u64 {
                    return Err(Error::Filter(format!(
                        "ERR the filter's file ({len} bytes) is larger than a Java array: use writeTo"
                    )));
                }
                array = Some(env.new_byte_array(len as jint)?);
            }
            if let Some(a) = &array {
                env.set_byte_array_region(a, at as jint, as_jbytes(piece))?;
            }
            Ok(())
        }))?;
        let a = array.ok_or(Error::Closed)?;
        Ok(a.into_raw())
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
        // Each piece is made under the filter's read lock (or from the copy
        // a write made), then written with the lock released (no Java code
        // runs under a filter's lock).
        let mut w = stream::Writer::new(env, &out);
        by_kind!(kind, T => dump_file::<T>(h, |_, _, piece| w.write(piece)))
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
        let f = load_file(kind, &b[..])?;
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
        let f = stream::read(env, &input, |r| load_file(kind, (r, len)))?;
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
        let (n, d) = by_kind!(kind, T => scandump_of::<T>(h, iter))?;
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
        by_kind!(kind, T => load_chunks::<T>(&chunks, &LOAD_LIMITS)
            .map(new_handle)
            .map_err(Error::Format))
    })
}
