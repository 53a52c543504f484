//! What the backup checks of an RDB as it streams by (pure): the `REDIS` magic it starts with,
//! and its end: the EOF opcode (0xFF) and the CRC-64 redis-server wrote over everything before
//! it (zero when `rdbchecksum no`). A transfer cut short, or bytes changed on the way, is then
//! caught before the upload is completed rather than when a restore fails to load.

use sha2::{Digest, Sha256};

/// The first bytes of every RDB file.
pub const MAGIC: &[u8; 5] = b"REDIS";

/// The RDB's end: the EOF opcode, then its 8-byte little-endian CRC-64.
const TRAILER: usize = 9;
const EOF_OPCODE: u8 = 0xFF;

/// Follows an RDB as it streams: its size, SHA-256, magic and CRC-64.
pub struct RdbCheck {
    size: u64,
    sha256: Sha256,
    head: Vec<u8>,
    crc: u64,
    /// The last (up to) [`TRAILER`] bytes seen: not yet in `crc`, as they may be the trailer.
    tail: Vec<u8>,
}

impl Default for RdbCheck {
    fn default() -> Self {
        Self::new()
    }
}

/// What the stream was, once it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub size: u64,
    /// Lowercase hex.
    pub sha256: String,
}

impl RdbCheck {
    pub fn new() -> Self {
        RdbCheck {
            size: 0,
            sha256: Sha256::new(),
            head: Vec::with_capacity(MAGIC.len()),
            crc: 0,
            tail: Vec::with_capacity(2 * TRAILER),
        }
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether the bytes so far can still be an RDB: `Err` as soon as they do not start with
    /// the magic.
    pub fn magic_ok(&self) -> Result<(), String> {
        if MAGIC.starts_with(&self.head) {
            Ok(())
        } else {
            Err(not_rdb(&self.head))
        }
    }

    pub fn update(&mut self, data: &[u8]) {
        self.size += data.len() as u64;
        self.sha256.update(data);
        if self.head.len() < MAGIC.len() {
            let take = (MAGIC.len() - self.head.len()).min(data.len());
            self.head.extend_from_slice(&data[..take]);
        }
        // Everything but the last TRAILER bytes of (tail + data) goes into the CRC.
        if data.len() >= TRAILER {
            self.crc = crc64(self.crc, &self.tail);
            let keep = data.len() - TRAILER;
            self.crc = crc64(self.crc, &data[..keep]);
            self.tail.clear();
            self.tail.extend_from_slice(&data[keep..]);
        } else {
            let release = (self.tail.len() + data.len()).saturating_sub(TRAILER);
            self.crc = crc64(self.crc, &self.tail[..release]);
            self.tail.drain(..release);
            self.tail.extend_from_slice(data);
        }
    }

    /// What the stream was (its size and SHA-256, whatever it holds), and the verdict on it
    /// as an RDB.
    pub fn finish(self) -> (Summary, Result<(), String>) {
        let summary = Summary {
            size: self.size,
            sha256: hex(&self.sha256.finalize()),
        };
        let verdict = verdict(&self.head, &self.tail, self.crc, self.size);
        (summary, verdict)
    }
}

fn verdict(head: &[u8], tail: &[u8], crc: u64, size: u64) -> Result<(), String> {
    let short = || format!("the payload is {size} bytes: too short for an RDB");
    if head.len() < MAGIC.len() {
        return Err(short());
    }
    if head != MAGIC {
        return Err(not_rdb(head));
    }
    let [opcode, checksum @ ..]: [u8; TRAILER] = tail.try_into().map_err(|_| short())?;
    if size < (MAGIC.len() + TRAILER) as u64 {
        return Err(short());
    }
    if opcode != EOF_OPCODE {
        return Err(format!(
            "the RDB does not end with the EOF opcode (0xff before its checksum, got {opcode:#04x}): \
             the transfer was cut short or is not an RDB"
        ));
    }
    // The opcode itself is covered by the checksum.
    let crc = crc64(crc, &[opcode]);
    let written = u64::from_le_bytes(checksum);
    if written != 0 && written != crc {
        return Err(format!(
            "the RDB's CRC-64 is {crc:#018x}, the RDB says {written:#018x}: bytes were changed on the way"
        ));
    }
    Ok(())
}

fn not_rdb(head: &[u8]) -> String {
    format!(
        "the payload is not an RDB: it starts with \"{}\", not \"REDIS\"",
        crate::resp::printable(head)
    )
}

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// Whether `text` is a SHA-256 in lowercase hex.
pub fn is_sha256_hex(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// CRC-64/Jones as redis-server computes it (`crc64.c`: reflected, initial value 0, no final
/// xor; the check value of "123456789" is 0xe9c6d914c4b8d9ca), continued from `crc`.
pub fn crc64(mut crc: u64, data: &[u8]) -> u64 {
    for chunk in data.chunks_exact(8) {
        let word = crc
            ^ u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
        crc = CRC_TABLES[7][(word & 0xff) as usize]
            ^ CRC_TABLES[6][((word >> 8) & 0xff) as usize]
            ^ CRC_TABLES[5][((word >> 16) & 0xff) as usize]
            ^ CRC_TABLES[4][((word >> 24) & 0xff) as usize]
            ^ CRC_TABLES[3][((word >> 32) & 0xff) as usize]
            ^ CRC_TABLES[2][((word >> 40) & 0xff) as usize]
            ^ CRC_TABLES[1][((word >> 48) & 0xff) as usize]
            ^ CRC_TABLES[0][(word >> 56) as usize];
    }
    for &byte in data.chunks_exact(8).remainder() {
        crc = CRC_TABLES[0][((crc ^ u64::from(byte)) & 0xff) as usize] ^ (crc >> 8);
    }
    crc
}

/// The polynomial 0xad93d23594c935a9, reflected.
const POLY_REFLECTED: u64 = 0x95ac_9329_ac4b_c9b5;

/// Slicing-by-8 tables: `[0]` is the byte-at-a-time table, `[k]` a byte followed by k zeros.
static CRC_TABLES: [[u64; 256]; 8] = crc_tables();

const fn crc_tables() -> [[u64; 256]; 8] {
    let mut tables = [[0u64; 256]; 8];
    let mut n = 0;
    while n < 256 {
        let mut crc = n as u64;
        let mut bit = 0;
        while bit < 8 {
            crc = if crc & 1 == 1 {
                (crc >> 1) ^ POLY_REFLECTED
            } else {
                crc >> 1
            };
            bit += 1;
        }
        tables[0][n] = crc;
        n += 1;
    }
    let mut k = 1;
    while k < 8 {
        let mut n = 0;
        while n < 256 {
            let previous = tables[k - 1][n];
            tables[k][n] = tables[0][(previous & 0xff) as usize] ^ (previous >> 8);
            n += 1;
        }
        k += 1;
    }
    tables
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc64_has_redis_check_value() {
        assert_eq!(crc64(0, b"123456789"), 0xe9c6_d914_c4b8_d9ca);
        // Continued over pieces, the same as in one go (and the 8-byte path agrees with the
        // byte path).
        let data: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 256) as u8).collect();
        let whole = crc64(0, &data);
        for cut in [0, 1, 7, 8, 9, 500, 999, 1000] {
            assert_eq!(
                crc64(crc64(0, &data[..cut]), &data[cut..]),
                whole,
                "cut {cut}"
            );
        }
        let bytewise = data
            .iter()
            .fold(0u64, |crc, b| crc64(crc, std::slice::from_ref(b)));
        assert_eq!(bytewise, whole);
    }

    /// A minimal well-formed RDB: magic, version, EOF opcode, the CRC-64 of all before it.
    fn rdb(body: &[u8], checksum: bool) -> Vec<u8> {
        let mut out = b"REDIS0010".to_vec();
        out.extend_from_slice(body);
        out.push(0xFF);
        let crc = if checksum { crc64(0, &out) } else { 0 };
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn check(data: &[u8], cuts: &[usize]) -> Result<Summary, String> {
        let (summary, verdict) = run(data, cuts);
        verdict.map(|()| summary)
    }

    fn run(data: &[u8], cuts: &[usize]) -> (Summary, Result<(), String>) {
        let mut check = RdbCheck::new();
        let mut from = 0;
        let mut bounds = cuts.to_vec();
        bounds.push(data.len());
        for to in bounds {
            check.update(&data[from..to]);
            from = to;
        }
        check.finish()
    }

    #[test]
    fn a_good_rdb_passes_however_it_is_cut() {
        let data = rdb(b"\xfe\x00\x00\x03key\x05value", true);
        let sha = hex(&Sha256::digest(&data));
        for cut in 0..=data.len() {
            let summary = check(&data, &[cut]).expect("a good RDB");
            assert_eq!(summary.size, data.len() as u64);
            assert_eq!(summary.sha256, sha);
        }
        let singles: Vec<usize> = (1..data.len()).collect();
        assert!(check(&data, &singles).is_ok());
    }

    #[test]
    fn an_rdb_written_without_checksum_passes() {
        assert!(check(&rdb(b"abc", false), &[4]).is_ok());
    }

    #[test]
    fn a_changed_byte_a_cut_stream_or_no_magic_fail() {
        let mut data = rdb(b"some keys and values", true);
        data[12] ^= 1;
        assert!(check(&data, &[]).expect_err("changed").contains("CRC-64"));
        let good = rdb(b"some keys and values", true);
        let cut = &good[..good.len() - 3];
        assert!(check(cut, &[]).expect_err("cut").contains("EOF opcode"));
        let mut other = good.clone();
        other[0] = b'X';
        let mut partial = RdbCheck::new();
        partial.update(&other[..2]);
        assert!(partial.magic_ok().is_err(), "known after two bytes");
        assert!(
            check(&other, &[])
                .expect_err("no magic")
                .contains("not an RDB")
        );
        assert!(check(b"RED", &[]).expect_err("short").contains("too short"));
        assert!(
            check(b"REDIS", &[])
                .expect_err("short")
                .contains("too short")
        );
        assert!(
            check(b"REDIS\xff\0\0\0\0\0\0\0", &[])
                .expect_err("short")
                .contains("too short")
        );
        // The size and hash are there whatever the verdict.
        let (summary, verdict) = run(b"garbage", &[]);
        assert!(verdict.is_err());
        assert_eq!(summary.size, 7);
        assert_eq!(summary.sha256, hex(&Sha256::digest(b"garbage")));
    }

    #[test]
    fn sha256_hex_is_recognised() {
        assert!(is_sha256_hex(&hex(&Sha256::digest(b"x"))));
        assert!(!is_sha256_hex(&hex(&Sha256::digest(b"x")).to_uppercase()));
        assert!(!is_sha256_hex("abc"));
    }
}
