//! The stress generator's commands: `impl Gen` (keys, items, every BF.* and CF.* command with
//! hostile arguments, LOADCHUNK data and RESTORE payloads from the pools, damage) and
//! `mutate` (random mutations of a byte string).

use super::values::*;
use super::*;

impl Gen {
    /// A hostile key. While generating a BF (CF) command, 70% of the keys come from the
    /// first (second) half of the keyspace, so that the two halves tend to hold filters of one
    /// type each and commands get past the type check more often than not.
    pub(crate) fn key(&mut self) -> Vec<u8> {
        let half = HOSTILE_KEYS / 2;
        match self.bias {
            Some(t) if self.r.percent(70) => hostile_key(t * half + self.r.index(half)),
            _ => hostile_key(self.r.index(HOSTILE_KEYS)),
        }
    }

    fn item(&mut self) -> Vec<u8> {
        let r = &mut self.r;
        if r.one_in(BIG_ITEM_ONE_IN) {
            let len = match r.below(8) {
                0 => MIB - 1,
                1..=4 => MIB,
                5 | 6 => MIB + 1,
                _ => 4 * MIB,
            };
            self.big_items += 1;
            let mut v = self.big[..len].to_vec();
            v[..8].copy_from_slice(&r.next().to_le_bytes());
            return v;
        }
        match r.below(10) {
            0..=4 => format!("i{}", r.below(300)).into_bytes(),
            5 | 6 => {
                let n = r.index(49);
                r.bytes(n)
            }
            7 => Vec::new(),
            8 => r.pick(KEYWORDS).as_bytes().to_vec(),
            _ => number(r),
        }
    }

    fn items(&mut self, max: usize) -> Vec<Vec<u8>> {
        let n = if self.r.one_in(50) {
            self.r.index(200)
        } else {
            self.r.index(max + 1)
        };
        (0..n).map(|_| self.item()).collect()
    }

    fn junk(&mut self) -> Vec<u8> {
        match self.r.below(4) {
            0 => self.r.pick(KEYWORDS).as_bytes().to_vec(),
            1 => number(&mut self.r),
            2 => b"UNKNOWN".to_vec(),
            _ => self.item(),
        }
    }

    /// An iterator for SCANDUMP/LOADCHUNK.
    fn iterator(&mut self) -> Vec<u8> {
        match self.r.below(10) {
            0..=3 => self.r.below(4).to_string().into_bytes(),
            4..=6 => self.r.below(1 << 26).to_string().into_bytes(),
            _ => number(&mut self.r),
        }
    }

    /// BF.MERGE over hostile keys: a right or wrong numkeys, 1-3 sources (the
    /// destination among them at times).
    fn bf_merge(&mut self) -> Vec<Vec<u8>> {
        let dest = self.key();
        let n = 1 + self.r.below(3) as usize;
        let mut sources: Vec<Vec<u8>> = (0..n).map(|_| self.key()).collect();
        if self.r.one_in(4) {
            sources[0] = dest.clone();
        }
        let numkeys = match self.r.below(8) {
            0 => number(&mut self.r),
            1 => (n + 1).to_string().into_bytes(),
            _ => n.to_string().into_bytes(),
        };
        let mut a = vec![b"BF.MERGE".to_vec(), dest, numkeys];
        a.extend(sources);
        a
    }

    fn bf_reserve(&mut self) -> Vec<Vec<u8>> {
        let mut a = vec![b"BF.RESERVE".to_vec(), self.key(), rate(&mut self.r)];
        a.push(capacity(&mut self.r));
        for _ in 0..self.r.below(4) {
            match self.r.below(5) {
                0 | 1 => {
                    a.push(b"EXPANSION".to_vec());
                    a.push(small(&mut self.r, 8));
                }
                2 => a.push(b"NONSCALING".to_vec()),
                3 => a.push(b"EXPANSION".to_vec()),
                _ => a.push(self.junk()),
            }
        }
        a
    }

    fn bf_insert(&mut self) -> Vec<Vec<u8>> {
        let mut a = vec![b"BF.INSERT".to_vec(), self.key()];
        for _ in 0..self.r.below(5) {
            match self.r.below(7) {
                0 => {
                    a.push(b"CAPACITY".to_vec());
                    a.push(capacity(&mut self.r));
                }
                1 => {
                    a.push(b"ERROR".to_vec());
                    a.push(rate(&mut self.r));
                }
                2 => {
                    a.push(b"EXPANSION".to_vec());
                    a.push(small(&mut self.r, 8));
                }
                3 => a.push(b"NOCREATE".to_vec()),
                4 => a.push(b"NONSCALING".to_vec()),
                _ => a.push(self.junk()),
            }
        }
        if self.r.percent(85) {
            a.push(b"ITEMS".to_vec());
            a.extend(self.items(8));
        }
        a
    }

    fn cf_reserve(&mut self) -> Vec<Vec<u8>> {
        let mut a = vec![b"CF.RESERVE".to_vec(), self.key(), capacity(&mut self.r)];
        for _ in 0..self.r.below(5) {
            match self.r.below(6) {
                0 => {
                    a.push(b"BUCKETSIZE".to_vec());
                    a.push(small(&mut self.r, 8));
                }
                1 => {
                    a.push(b"MAXITERATIONS".to_vec());
                    a.push(small(&mut self.r, 60));
                }
                2 => {
                    a.push(b"EXPANSION".to_vec());
                    a.push(small(&mut self.r, 4));
                }
                3 => {
                    a.push(b"ERROR".to_vec());
                    a.push(rate(&mut self.r));
                }
                4 => a.push(self.r.pick(KEYWORDS).as_bytes().to_vec()),
                _ => a.push(self.junk()),
            }
        }
        a
    }

    fn cf_insert(&mut self, name: &str) -> Vec<Vec<u8>> {
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        for _ in 0..self.r.below(4) {
            match self.r.below(5) {
                0 => {
                    a.push(b"CAPACITY".to_vec());
                    a.push(capacity(&mut self.r));
                }
                1 => {
                    a.push(b"ERROR".to_vec());
                    a.push(rate(&mut self.r));
                }
                2 => a.push(b"NOCREATE".to_vec()),
                _ => a.push(self.junk()),
            }
        }
        if self.r.percent(85) {
            a.push(b"ITEMS".to_vec());
            a.extend(self.items(8));
        }
        a
    }

    /// `<name> key item` (one item).
    fn key_item(&mut self, name: &str) -> Vec<Vec<u8>> {
        vec![name.as_bytes().to_vec(), self.key(), self.item()]
    }

    /// `<name> key item...`.
    fn key_items(&mut self, name: &str) -> Vec<Vec<u8>> {
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        a.extend(self.items(10));
        a
    }

    fn loadchunk(&mut self, t: usize) -> Vec<Vec<u8>> {
        let name = if t == 0 {
            "BF.LOADCHUNK"
        } else {
            "CF.LOADCHUNK"
        };
        let key = self.key();
        let (it, data) = match self.r.below(20) {
            // A real header, untouched (recreates a filter), mutated, or of the other type.
            0..=2 => (b"1".to_vec(), self.pool_header(t)),
            3..=8 => {
                let mut h = self.pool_header(t);
                mutate(&mut self.r, &mut h);
                (b"1".to_vec(), h)
            }
            9 => (b"1".to_vec(), self.pool_header(1 - t)),
            // A real chunk at its iterator, untouched or mutated, or at another iterator.
            10 | 11 => self.pool_chunk(t),
            12..=14 => {
                let (it, mut c) = self.pool_chunk(t);
                mutate(&mut self.r, &mut c);
                (it, c)
            }
            15 => {
                let (_, c) = self.pool_chunk(t);
                (self.iterator(), c)
            }
            // Random bytes.
            _ => {
                let it = self.iterator();
                let n = match self.r.below(4) {
                    0 => self.r.index(16),
                    1 | 2 => self.r.index(200),
                    _ => self.r.index(70_000),
                };
                (it, self.r.bytes(n))
            }
        };
        vec![name.as_bytes().to_vec(), key, it, data]
    }

    fn pool_header(&mut self, t: usize) -> Vec<u8> {
        let p = &self.pool.headers[t];
        if p.is_empty() {
            return self.r.bytes(64);
        }
        p[self.r.index(p.len())].clone()
    }

    fn pool_chunk(&mut self, t: usize) -> (Vec<u8>, Vec<u8>) {
        let p = &self.pool.chunks[t];
        if p.is_empty() {
            return (b"2".to_vec(), self.r.bytes(64));
        }
        let (it, c) = &p[self.r.index(p.len())];
        (it.to_string().into_bytes(), c.clone())
    }

    /// A RESTORE payload: a real DUMP (untouched or mutated, always resealed with a correct
    /// CRC so it reaches the module's loader), a synthetic module value, or garbage; and
    /// whether it is an untouched DUMP (which RESTORE must accept).
    fn restore_payload(&mut self) -> (Vec<u8>, bool) {
        let t = self.r.index(2);
        let have = !self.pool.dumps[t].is_empty();
        let payload = match self.r.below(20) {
            0..=2 if have => return (self.pool_dump(t).encode(), true),
            3..=12 if have => {
                let mut p = self.pool_dump(t);
                for _ in 0..self.r.range(1, 2) {
                    self.mutate_payload(&mut p, t);
                }
                p.encode()
            }
            13 | 14 if have => {
                // Byte-level damage to the whole body (opcodes, lengths), or a truncation.
                let mut body = self.pool_dump(t).body();
                if self.r.percent(50) {
                    let n = self.r.index(body.len());
                    body.truncate(n.max(1));
                } else {
                    for _ in 0..self.r.range(1, 3) {
                        let i = self.r.index(body.len());
                        body[i] ^= 1 << self.r.below(8);
                    }
                }
                seal(body, self.rdb_version)
            }
            15..=17 => {
                // Synthetic: the module's type id, random strings (or a mutated header).
                let mut p = ModulePayload {
                    module_id: self.module_ids[t],
                    scheme: Some(self.r.below(3)),
                    strings: Vec::new(),
                    rdb_version: self.rdb_version,
                };
                for _ in 0..self.r.below(4) {
                    let s = if self.r.percent(50) {
                        let mut h = self.pool_header(t);
                        mutate(&mut self.r, &mut h);
                        h
                    } else {
                        let n = self.r.index(300);
                        self.r.bytes(n)
                    };
                    p.strings.push(s);
                }
                p.encode()
            }
            18 => {
                // A module value made of random opcodes and lengths.
                let mut body = vec![common::rdb::RDB_TYPE_MODULE_2];
                body.extend(rdb_len(self.module_ids[t]));
                let n = self.r.index(64);
                body.extend(self.r.bytes(n));
                seal(body, self.rdb_version)
            }
            _ => {
                let n = self.r.index(100);
                self.r.bytes(n)
            }
        };
        (payload, false)
    }

    fn pool_dump(&mut self, t: usize) -> ModulePayload {
        let p = &self.pool.dumps[t];
        p[self.r.index(p.len())].clone()
    }

    fn mutate_payload(&mut self, p: &mut ModulePayload, t: usize) {
        let r = &mut self.r;
        match r.below(10) {
            0..=3 if !p.strings.is_empty() => {
                let i = r.index(p.strings.len());
                mutate(r, &mut p.strings[i]);
            }
            4 if !p.strings.is_empty() => {
                let i = r.index(p.strings.len());
                p.strings.remove(i);
            }
            5 if !p.strings.is_empty() => {
                let i = r.index(p.strings.len());
                let s = p.strings[i].clone();
                p.strings.insert(r.index(p.strings.len() + 1), s);
            }
            6 => {
                let n = r.index(100);
                let s = r.bytes(n);
                p.strings.insert(r.index(p.strings.len() + 1), s);
            }
            7 => {
                // The other type's loader reads this type's payload.
                p.module_id = self.module_ids[1 - t];
            }
            8 => {
                // Another encoding version (0-4: RedisBloom's field order, 5: no scheme).
                p.module_id = (p.module_id & !1023) | r.below(1024);
            }
            _ => {
                // Another filter's header on this payload's data.
                let h = self.pool_header(t);
                if p.strings.is_empty() {
                    p.strings.push(h);
                } else {
                    p.strings[0] = h;
                }
            }
        }
    }

    /// One hostile command (or a few, for multi-step shapes), each with whether it must
    /// succeed whatever state the keys are in. Everything goes to the hostile keys; nothing
    /// here can name a control key.
    pub(crate) fn hostile(&mut self, out: &mut Vec<(Vec<Vec<u8>>, bool)>) {
        let mut strict = false;
        let arm = self.r.below(100);
        self.bias = match arm {
            0..=34 => Some(0),
            35..=70 => Some(1),
            _ => None,
        };
        let a: Vec<Vec<u8>> = match arm {
            0..=3 => self.bf_reserve(),
            4..=8 => self.key_item("BF.ADD"),
            9..=12 => self.key_items("BF.MADD"),
            13..=17 => self.bf_insert(),
            18..=20 => self.key_item("BF.EXISTS"),
            21..=23 => self.key_items("BF.MEXISTS"),
            24 | 25 => {
                let mut a = vec![b"BF.INFO".to_vec(), self.key()];
                let fields = [
                    b"CAPACITY".as_slice(),
                    b"SIZE",
                    b"FILTERS",
                    b"ITEMS",
                    b"EXPANSION",
                ];
                match self.r.below(10) {
                    0..=5 => a.push(self.r.pick(&fields).to_vec()),
                    6 => a.push(self.junk()),
                    _ => {}
                }
                a
            }
            26 => vec![b"BF.CARD".to_vec(), self.key()],
            27 | 28 => vec![b"BF.SCANDUMP".to_vec(), self.key(), self.iterator()],
            29..=33 => self.loadchunk(0),
            34 if self.r.one_in(2) => vec![b"BF.DEBUG".to_vec(), self.key()],
            34 => self.bf_merge(),
            35..=38 => self.cf_reserve(),
            39..=42 => self.key_item("CF.ADD"),
            43 | 44 => self.key_item("CF.ADDNX"),
            45..=47 => self.cf_insert("CF.INSERT"),
            48 | 49 => self.cf_insert("CF.INSERTNX"),
            50 | 51 => self.key_item("CF.EXISTS"),
            52 | 53 => self.key_items("CF.MEXISTS"),
            54 | 55 => self.key_item("CF.COUNT"),
            56..=59 => self.key_item("CF.DEL"),
            60 | 61 => vec![b"CF.COMPACT".to_vec(), self.key()],
            62 => vec![b"CF.INFO".to_vec(), self.key()],
            63 | 64 => vec![b"CF.SCANDUMP".to_vec(), self.key(), self.iterator()],
            65..=69 => self.loadchunk(1),
            70 => vec![b"CF.DEBUG".to_vec(), self.key()],
            71..=74 => {
                let mut a = vec![b"DEL".to_vec(), self.key()];
                if self.r.percent(20) {
                    a.push(self.key());
                }
                a
            }
            75 => vec![b"SET".to_vec(), self.key(), self.item_small()],
            76 => {
                // A list (bounded: recreated, never appended to).
                let k = self.key();
                out.push((vec![b"DEL".to_vec(), k.clone()], true));
                vec![b"RPUSH".to_vec(), k, b"a".to_vec(), b"b".to_vec()]
            }
            77..=84 => {
                let mut a = vec![b"RESTORE".to_vec(), self.key()];
                let ttl = match self.r.below(20) {
                    0 => b"-1".to_vec(),
                    1 => b"abc".to_vec(),
                    _ => b"0".to_vec(),
                };
                let ttl_ok = ttl == b"0";
                a.push(ttl);
                let (payload, exact) = self.restore_payload();
                a.push(payload);
                let replace = self.r.percent(85);
                if replace {
                    a.push(b"REPLACE".to_vec());
                }
                // What the module wrote, it reads back (same server, same limits).
                strict = exact && ttl_ok && replace;
                a
            }
            85 | 86 => {
                let mut a = vec![b"COPY".to_vec(), self.key(), self.key()];
                if self.r.percent(50) {
                    a.push(b"REPLACE".to_vec());
                }
                a
            }
            87 => vec![b"RENAME".to_vec(), self.key(), self.key()],
            88..=92 => {
                // Callbacks on whatever state the key holds: none may fail. Now and then the
                // whole dataset goes through RDB in the middle of a batch.
                strict = true;
                match arm {
                    88 | 89 => vec![b"DUMP".to_vec(), self.key()],
                    90 => vec![b"MEMORY".to_vec(), b"USAGE".to_vec(), self.key()],
                    91 => vec![b"DEBUG".to_vec(), b"DIGEST-VALUE".to_vec(), self.key()],
                    _ if self.r.one_in(40) => vec![b"DEBUG".to_vec(), b"RELOAD".to_vec()],
                    _ => vec![b"TYPE".to_vec(), self.key()],
                }
            }
            _ => {
                // Any module command on a hostile key, the other arguments all hostile.
                let name = self
                    .r
                    .pick(MODULE_COMMANDS)
                    .to_ascii_uppercase()
                    .into_bytes();
                let mut a = vec![name, self.key()];
                for _ in 0..self.r.below(6) {
                    a.push(self.junk());
                }
                a
            }
        };
        let module_command = a[0].starts_with(b"BF.") || a[0].starts_with(b"CF.");
        if module_command {
            out.push((self.damage(a), false));
        } else {
            out.push((a, strict));
        }
    }

    fn item_small(&mut self) -> Vec<u8> {
        let n = self.r.index(32);
        self.r.bytes(n)
    }

    /// Sometimes break a module command's shape: drop, duplicate or insert an argument after the key
    /// (never the key itself, so no command names a key outside the hostile set), or cut the
    /// command down to its name (wrong arity).
    fn damage(&mut self, mut a: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        if !self.r.percent(15) {
            return a;
        }
        match self.r.below(5) {
            0 if a.len() > 2 => {
                let i = 2 + self.r.index(a.len() - 2);
                a.remove(i);
            }
            1 if a.len() > 2 => {
                let i = 2 + self.r.index(a.len() - 2);
                let v = a[i].clone();
                a.insert(i, v);
            }
            2 => {
                let i = if a.len() >= 2 {
                    2 + self.r.index(a.len() - 1)
                } else {
                    a.len()
                };
                let j = self.junk();
                a.insert(i, j);
            }
            3 => a.truncate(1 + self.r.index(2)),
            _ => {
                for _ in 0..self.r.range(1, 40) {
                    let j = self.junk();
                    a.push(j);
                }
            }
        }
        a
    }
}

/// 1-3 random mutations of a byte string: bit flips, byte and 32/64-bit word overwrites
/// with edge values, truncation, extension, emptying.
fn mutate(r: &mut Rng, b: &mut Vec<u8>) {
    for _ in 0..r.range(1, 3) {
        match r.below(8) {
            0 | 1 if !b.is_empty() => {
                for _ in 0..r.range(1, 8) {
                    let i = r.index(b.len());
                    b[i] ^= 1 << r.below(8);
                }
            }
            2 if !b.is_empty() => {
                let i = r.index(b.len());
                let any = r.next() as u8;
                b[i] = *r.pick(&[0u8, 1, 0x7f, 0x80, 0xff, any]);
            }
            3 | 4 if b.len() >= 8 => {
                let edges = [
                    0u64,
                    1,
                    2,
                    u64::from(u32::MAX),
                    1 << 31,
                    1 << 32,
                    u64::MAX,
                    1 << 63,
                    (1 << 63) - 1,
                    r.below(100),
                    r.next(),
                ];
                let v = *r.pick(&edges);
                if r.percent(50) {
                    let at = r.index(b.len() / 4) * 4;
                    b[at..at + 4].copy_from_slice(&(v as u32).to_le_bytes());
                } else {
                    let at = r.index(b.len() / 8) * 8;
                    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
                }
            }
            5 => {
                let n = r.index(b.len() + 1);
                b.truncate(n);
            }
            6 => {
                let n = r.index(65);
                b.extend(r.bytes(n));
            }
            _ => {
                if r.one_in(4) {
                    b.clear();
                }
            }
        }
    }
}
