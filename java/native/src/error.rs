//! How a native call fails on the Java side: every entry point runs inside
//! [`guard`], which catches panics (none crosses JNI) and turns an [`Error`]
//! into the Java exception it names. A Java exception already pending (one
//! a stream callback threw, or one a JNI call raised) is left as it is.

use std::panic::{catch_unwind, AssertUnwindSafe};

use jni::JNIEnv;

/// `io.ferrobloom.FilterException`: a refused operation, with the server's text.
const FILTER_EXCEPTION: &str = "io/ferrobloom/FilterException";
/// `io.ferrobloom.FormatException`: bytes, a file or chunks that are no valid filter.
const FORMAT_EXCEPTION: &str = "io/ferrobloom/FormatException";

/// Why a native call failed.
#[derive(Clone, Debug)]
pub(crate) enum Error {
    /// Refused, with the server's error text (`FilterException`).
    Filter(String),
    /// Not a valid filter (`FormatException`).
    Format(String),
    /// The allocator refused memory (`OutOfMemoryError`).
    OutOfMemory(String),
    /// The filter was closed (`IllegalStateException`).
    Closed,
    /// An argument Java should not have passed (`IllegalArgumentException`).
    Argument(String),
    /// A null where an object was needed (`NullPointerException`).
    Null(&'static str),
    /// A Java exception is pending: it propagates as it is.
    Java,
}

impl From<jni::errors::Error> for Error {
    fn from(e: jni::errors::Error) -> Self {
        use jni::errors::Error as J;
        match e {
            J::JavaException => Error::Java,
            J::NullPtr(what) | J::NullDeref(what) => Error::Null(what),
            other => Error::Filter(format!("ERR JNI call failed: {other}")),
        }
    }
}

pub(crate) type Result<T> = std::result::Result<T, Error>;

/// Runs one entry point's body: its value, or `default` with a Java exception
/// thrown (a panic becomes a `FilterException` naming it; it never unwinds
/// into the JVM).
pub(crate) fn guard<'l, R>(
    env: &mut JNIEnv<'l>,
    default: R,
    body: impl FnOnce(&mut JNIEnv<'l>) -> Result<R>,
) -> R {
    let outcome = catch_unwind(AssertUnwindSafe(|| body(env)));
    match outcome {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => {
            throw(env, e);
            default
        }
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown".into());
            throw(
                env,
                Error::Filter(format!("ERR internal error in ferrobloom: {what}")),
            );
            default
        }
    }
}

/// Throws `e` as its Java exception, unless one is pending already.
fn throw(env: &mut JNIEnv<'_>, e: Error) {
    if env.exception_check().unwrap_or(true) {
        return;
    }
    let (class, msg) = match e {
        Error::Filter(m) => (FILTER_EXCEPTION, m),
        Error::Format(m) => (FORMAT_EXCEPTION, m),
        Error::OutOfMemory(m) => ("java/lang/OutOfMemoryError", m),
        Error::Closed => (
            "java/lang/IllegalStateException",
            "the filter is closed".to_string(),
        ),
        Error::Argument(m) => ("java/lang/IllegalArgumentException", m),
        Error::Null(what) => ("java/lang/NullPointerException", what.to_string()),
        Error::Java => return,
    };
    // If even throwing fails (no memory for the exception), the JVM has an
    // OutOfMemoryError pending or will raise one: nothing more can be done.
    let _ = env.throw_new(class, msg);
}
