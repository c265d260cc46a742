//! Java streams as the core's readers and writers: `writeTo(OutputStream)`
//! writes a filter's file as it is made, a piece at a time (`files.rs`), in
//! blocks of at most 1 MiB through one reused Java array;
//! `readFrom(InputStream)` gives the core's streaming file reader
//! (`ferrobloom_core::file::read_from`, which makes every check of the
//! format) a `std::io::Read` over the stream, 1 MiB per `read` call. An
//! exception the stream throws propagates to the Java caller as it was.

use std::io;

use jni::objects::{JByteArray, JObject, JValue};
use jni::sys::jint;
use jni::JNIEnv;

use crate::error::{Error, Result};
use crate::ffi::{as_jbytes, as_jbytes_mut};

/// Bytes moved per call into Java.
const BLOCK: usize = 1 << 20;

/// A Java `OutputStream` written through one reused Java array.
pub(crate) struct Writer<'a, 'l, 'o> {
    env: &'a mut JNIEnv<'l>,
    out: &'a JObject<'o>,
    buf: Option<JByteArray<'l>>,
}

impl<'a, 'l, 'o> Writer<'a, 'l, 'o> {
    pub(crate) fn new(env: &'a mut JNIEnv<'l>, out: &'a JObject<'o>) -> Self {
        Writer {
            env,
            out,
            buf: None,
        }
    }

    /// Writes `bytes`, in blocks of at most [`BLOCK`] bytes (the array is
    /// made at the first block's size, and again larger if a later block
    /// needs it).
    pub(crate) fn write(&mut self, bytes: &[u8]) -> Result<()> {
        for block in bytes.chunks(BLOCK) {
            let have = match &self.buf {
                Some(b) => self.env.get_array_length(b)? as usize,
                None => 0,
            };
            if have < block.len() {
                self.buf = Some(self.env.new_byte_array(block.len() as jint)?);
            }
            let Some(buf) = &self.buf else {
                return Err(Error::Null("buffer"));
            };
            self.env.set_byte_array_region(buf, 0, as_jbytes(block))?;
            self.env.call_method(
                self.out,
                "write",
                "([BII)V",
                &[
                    JValue::Object(buf),
                    JValue::Int(0),
                    JValue::Int(block.len() as jint),
                ],
            )?;
        }
        Ok(())
    }
}

/// A Java `InputStream` as a reader. A Java exception stays pending and
/// ends the read (the core sees an I/O error).
struct JavaReader<'a, 'l, 'o> {
    env: &'a mut JNIEnv<'l>,
    input: &'a JObject<'o>,
    buf: JByteArray<'l>,
    threw: bool,
}

impl JavaReader<'_, '_, '_> {
    fn read_into(&mut self, dst: &mut [u8]) -> Result<usize> {
        let want = dst.len().min(BLOCK);
        let got = self
            .env
            .call_method(
                self.input,
                "read",
                "([BII)I",
                &[
                    JValue::Object(&self.buf),
                    JValue::Int(0),
                    JValue::Int(want as jint),
                ],
            )?
            .i()?;
        if got < 0 {
            return Ok(0);
        }
        let got = got as usize;
        let Some(dst) = dst.get_mut(..got).filter(|_| got <= want) else {
            return Err(Error::Format(
                "read() returned more bytes than asked".into(),
            ));
        };
        self.env
            .get_byte_array_region(&self.buf, 0, as_jbytes_mut(dst))?;
        Ok(got)
    }
}

impl io::Read for JavaReader<'_, '_, '_> {
    fn read(&mut self, dst: &mut [u8]) -> io::Result<usize> {
        if dst.is_empty() {
            return Ok(0);
        }
        self.read_into(dst).map_err(|e| {
            self.threw = true;
            match e {
                Error::Java => io::Error::other("the stream threw"),
                other => io::Error::other(format!("{other:?}")),
            }
        })
    }
}

/// Runs a core reader over the `InputStream` `input`; what the stream threw
/// propagates as it was, a refusal of the bytes is a `FormatException`.
pub(crate) fn read<T>(
    env: &mut JNIEnv<'_>,
    input: &JObject<'_>,
    f: impl FnOnce(&mut dyn io::Read) -> Result<T>,
) -> Result<T> {
    let buf = env.new_byte_array(BLOCK as jint)?;
    let mut r = JavaReader {
        env,
        input,
        buf,
        threw: false,
    };
    let got = f(&mut r);
    if r.threw && r.env.exception_check().unwrap_or(false) {
        return Err(Error::Java);
    }
    got
}
