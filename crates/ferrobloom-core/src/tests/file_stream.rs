//! The streaming readers (`read_from`, `read_any_from`) against the slice
//! readers: the committed files and every kind load identically through every
//! reader (whole, a byte at a time, odd block sizes, length known or not);
//! every truncation and every single-byte change is refused by all of them;
//! sealed changes get the same answer (and, with the length known, the same
//! text) from all; a header that lies about its sizes is refused without
//! allocating or reading more than the input carries.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io;

use super::tests::{blooms, cuckoos, file_of, reseal};
use super::*;
use crate::api::LOAD_LIMITS;
use crate::cuckoo::CuckooFilter;
use crate::filter::BloomFilter;

/// A reader that gives at most `step` bytes a call and counts what it gave.
struct Trickle<'a> {
    b: &'a [u8],
    step: usize,
    given: usize,
}

impl<'a> Trickle<'a> {
    fn new(b: &'a [u8], step: usize) -> Self {
        Trickle { b, step, given: 0 }
    }
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.b.len());
        let (now, rest) = self.b.split_at(n);
        buf[..n].copy_from_slice(now);
        self.b = rest;
        self.given += n;
        Ok(n)
    }
}

fn rewrite(f: Result<AnyFilter, String>) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    match f? {
        AnyFilter::Bloom(f) => write(&f, &mut out)?,
        AnyFilter::Cuckoo(f) => write(&f, &mut out)?,
    }
    Ok(out)
}

/// What each reader makes of `b` (the file it loads, written again, or its
/// error): the slice reader, then streams of known length (whole, 7 bytes a
/// call) and of unknown length (a byte a call, 4 KiB a call).
fn every_reader(b: &[u8]) -> [Result<Vec<u8>, String>; 5] {
    let n = Some(b.len() as u64);
    let l = &LOAD_LIMITS;
    [
        rewrite(read_any(b, l)),
        rewrite(read_any_from(&mut &b[..], n, l)),
        rewrite(read_any_from(&mut Trickle::new(b, 7), n, l)),
        rewrite(read_any_from(&mut Trickle::new(b, 1), None, l)),
        rewrite(read_any_from(&mut Trickle::new(b, 4096), None, l)),
    ]
}

fn small_files() -> Vec<Vec<u8>> {
    let mut files: Vec<Vec<u8>> = blooms().iter().map(file_of).collect();
    files.extend(cuckoos().iter().map(file_of));
    files
}

fn fixtures() -> [&'static [u8]; 4] {
    [
        include_bytes!("../../tests/fixtures/files/bloom-classic-v1.fbf"),
        include_bytes!("../../tests/fixtures/files/bloom-redisbloom-v1.fbf"),
        include_bytes!("../../tests/fixtures/files/cuckoo-ferrobloom-v1.fbf"),
        include_bytes!("../../tests/fixtures/files/cuckoo-redisbloom-v1.fbf"),
    ]
}

#[test]
fn committed_files_and_every_kind_stream_in_identically() {
    let mut files: Vec<Vec<u8>> = fixtures().iter().map(|f| f.to_vec()).collect();
    files.extend(small_files());
    for (i, f) in files.iter().enumerate() {
        for (r, got) in every_reader(f).into_iter().enumerate() {
            assert_eq!(got.as_deref(), Ok(&f[..]), "file {i}, reader {r}");
        }
        // The typed readers: the file's kind loads, the other is refused by name.
        let n = Some(f.len() as u64);
        let bloom = read_from::<BloomFilter>(&mut &f[..], n, &LOAD_LIMITS);
        let cuckoo = read_from::<CuckooFilter>(&mut Trickle::new(f, 3), None, &LOAD_LIMITS);
        let (ok, refused) = match parse(f).map(|p| p.kind) {
            Ok(Kind::Bloom) => (bloom.map(|g| file_of(&g)), cuckoo.map(|_| ())),
            Ok(Kind::Cuckoo) => (cuckoo.map(|g| file_of(&g)), bloom.map(|_| ())),
            Err(e) => panic!("file {i}: {e}"),
        };
        assert_eq!(ok.as_deref(), Ok(&f[..]), "file {i}");
        assert!(
            refused.is_err_and(|e| e.contains("the file holds a")),
            "file {i}"
        );
    }
}

#[test]
fn every_truncation_and_byte_change_is_refused_by_every_reader() {
    for f in small_files() {
        for cut in 0..f.len() {
            for (r, got) in every_reader(&f[..cut]).into_iter().enumerate() {
                assert!(got.is_err(), "cut at {cut}, reader {r}");
            }
            // The length given is the whole file's, the reader ends early.
            let mut short = Trickle::new(&f[..cut], 5);
            let n = Some(f.len() as u64);
            let e = read_any_from(&mut short, n, &LOAD_LIMITS).map(|_| ());
            let want = if cut < MAGIC.len() {
                "bad magic"
            } else {
                "truncated"
            };
            assert!(e.is_err_and(|e| e.contains(want)), "cut at {cut}");
            let mut t = f[..cut].to_vec();
            reseal(&mut t);
            for (r, got) in every_reader(&t).into_iter().enumerate() {
                assert!(got.is_err(), "sealed cut at {cut}, reader {r}");
            }
        }
        for at in 0..f.len() {
            for x in [0x01, 0x80, 0xff] {
                let mut m = f.clone();
                m[at] ^= x;
                for (r, got) in every_reader(&m).into_iter().enumerate() {
                    assert!(got.is_err(), "byte {at} ^ {x:#x}, reader {r}");
                }
                // Sealed: the checks behind the checksum decide, alike for
                // every reader; with the length known, in the same words.
                if at < f.len() - CHECKSUM {
                    reseal(&mut m);
                    let got = every_reader(&m);
                    for (r, g) in got.iter().enumerate() {
                        assert_eq!(g.is_ok(), got[0].is_ok(), "sealed byte {at}, reader {r}");
                        assert_eq!(
                            g.as_ref().ok(),
                            got[0].as_ref().ok(),
                            "sealed byte {at}, reader {r}"
                        );
                    }
                    assert_eq!(got[1], got[0], "sealed byte {at}");
                    assert_eq!(got[2], got[0], "sealed byte {at}");
                }
            }
        }
    }
}

#[test]
fn readers_errors_and_extra_bytes() {
    let f = &small_files()[0];
    // A reader's error is refused; an interrupted read is retried.
    struct Failing<'a>(Trickle<'a>, usize);
    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.1 += 1;
            match self.1 % 3 {
                0 => Err(io::ErrorKind::Interrupted.into()),
                _ if self.0.given > 40 => Err(io::Error::other("disk on fire")),
                _ => self.0.read(buf),
            }
        }
    }
    for len in [None, Some(f.len() as u64)] {
        let e = read_any_from(&mut Failing(Trickle::new(f, 8), 0), len, &LOAD_LIMITS);
        assert_eq!(e.err().as_deref(), Some("read error: disk on fire"));
    }
    // With the length known, the reader stops there; without it the file
    // must end at its checksum.
    let mut longer = f.clone();
    longer.extend_from_slice(b"next");
    let mut r = Trickle::new(&longer, 5);
    assert!(read_any_from(&mut r, Some(f.len() as u64), &LOAD_LIMITS).is_ok());
    assert_eq!(r.given, f.len());
    let e = read_any_from(&mut Trickle::new(&longer, 5), None, &LOAD_LIMITS);
    assert_eq!(e.err().as_deref(), Some("bytes after the checksum"));
    // A length beyond the preamble's reach is the preamble's error.
    let e = read_any_from(&mut &f[..20], Some(20), &LOAD_LIMITS);
    assert_eq!(e.err().as_deref(), Some("truncated file (preamble)"));
}

/// The largest single allocation of the current thread while watched.
struct Largest;

thread_local! {
    static WATCH: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note(n: usize) {
    let _ = WATCH.try_with(|w| {
        if w.get() {
            let _ = LARGEST.try_with(|m| m.set(m.get().max(n)));
        }
    });
}

// SAFETY: every call goes to `System` unchanged; `note` only reads and
// writes const-initialized thread-locals, which never allocate.
unsafe impl GlobalAlloc for Largest {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: the caller's GlobalAlloc contract, passed on.
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        note(l.size());
        // SAFETY: as in `alloc`.
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        // SAFETY: as in `alloc`.
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        note(n);
        // SAFETY: as in `alloc`.
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static ALLOC: Largest = Largest;

/// The largest allocation `f` makes on this thread.
fn largest_allocation<R>(f: impl FnOnce() -> R) -> (R, usize) {
    LARGEST.with(|m| m.set(0));
    WATCH.with(|w| w.set(true));
    let r = f();
    WATCH.with(|w| w.set(false));
    (r, LARGEST.with(|m| m.get()))
}

/// A cuckoo file whose header claims `buckets` buckets in its first
/// sub-filter and whose chunk count agrees, then one data chunk that claims
/// 16 MiB with the right iterator, and 100 bytes.
fn lying_file(buckets: u64) -> (Vec<u8>, u64, u64) {
    let f = file_of(&cuckoos()[0]);
    let hlen = u32::from_le_bytes(f[24..28].try_into().unwrap()) as usize;
    let mut header = f[28..28 + hlen].to_vec();
    header[24..32].copy_from_slice(&buckets.to_le_bytes());
    let lengths = CuckooFilter::data_lengths(&header, &LOAD_LIMITS, HeaderFormat::Any).unwrap();
    let total: u64 = lengths.iter().sum();
    let pieces: u64 = lengths.iter().map(|l| l.div_ceil(1 << 24)).sum();
    let mut m = f[..PREAMBLE].to_vec();
    m[12..16].copy_from_slice(&u32::try_from(pieces + 1).unwrap().to_le_bytes());
    m.extend_from_slice(&1i64.to_le_bytes());
    m.extend_from_slice(&(hlen as u32).to_le_bytes());
    m.extend_from_slice(&header);
    m.extend_from_slice(&(1 + (1i64 << 24)).to_le_bytes());
    m.extend_from_slice(&(1u32 << 24).to_le_bytes());
    m.extend_from_slice(&[7u8; 100]);
    reseal(&mut m);
    (m, total, pieces + 1)
}

#[test]
fn a_header_that_lies_about_its_sizes_is_refused_without_allocating() {
    // 2^29 buckets (the most CF.RESERVE's 2^30 capacity gives at bucket
    // size 2): 1 GiB of table in each sub-filter, more chunks than the file
    // can hold; 2^23: 16 MiB, 8 chunks.
    for buckets in [1u64 << 29, 1 << 23] {
        let (m, total, count) = lying_file(buckets);
        let too_many = format!("chunk count {count} larger than the file can hold");
        let known_err = if buckets == 1 << 29 {
            too_many.as_str()
        } else {
            "data length does not match the header"
        };
        assert!(total >= 2 * buckets, "{total}");
        let len = m.len();
        for (known, step) in [(false, 1), (false, 4096), (true, 1), (true, 1 << 20)] {
            let mut r = Trickle::new(&m, step);
            let n = known.then_some(len as u64);
            let (got, largest) = largest_allocation(|| {
                read_from::<CuckooFilter>(&mut r, n, &LOAD_LIMITS).map(|_| ())
            });
            let e = got.unwrap_err();
            let want = if known { known_err } else { "truncated file" };
            assert_eq!(e, want, "{buckets} buckets, known {known}, step {step}");
            assert!(r.given <= len, "read {} of {len}", r.given);
            assert!(
                largest < 16 * len,
                "allocated {largest} bytes for {len} of input"
            );
        }
        // The slice reader likewise.
        let (got, largest) = largest_allocation(|| read_any(&m, &LOAD_LIMITS).map(|_| ()));
        assert_eq!(got.err().as_deref(), Some(known_err));
        assert!(largest < 16 * len, "allocated {largest} bytes");
    }
    // A true file: the allocation is the filter's own, made once the data arrived.
    let g = &cuckoos()[0];
    let f = file_of(g);
    let (got, largest) = largest_allocation(|| {
        read_from::<CuckooFilter>(&mut Trickle::new(&f, 1), None, &LOAD_LIMITS)
    });
    assert_eq!(file_of(&got.unwrap()), f);
    assert!(largest as u64 >= g.table_bytes(), "{largest}");
}
