//! The pieces of RESP and of the replication handshake the backup reads (pure): a command as
//! RESP, bounded reply lines with the `\n` keepalives skipped, `+FULLRESYNC`, the bulk header of
//! the RDB (`$<len>` or `$EOF:<mark>`), and the end of an EOF-marked payload, which may fall
//! across any number of reads. What the server sends is the tenant's: nothing here trusts a
//! length, a line or a mark it has not checked.

/// The longest reply line read during the handshake, `\r\n` excluded.
pub const MAX_LINE: usize = 1024;

/// The length of the mark that ends a diskless transfer (`RDB_EOF_MARK_SIZE`).
pub const EOF_MARK_LEN: usize = 40;

/// `args` as a RESP array of bulk strings.
pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for arg in args {
        out.extend_from_slice(format!("${}\r\n", arg.len()).as_bytes());
        out.extend_from_slice(arg);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// What a line assembler got from some bytes.
#[derive(Debug, PartialEq, Eq)]
pub enum Fed {
    /// Every byte was taken; the line goes on.
    More,
    /// A line ended after `consumed` bytes of the input; the rest belongs to what follows.
    Line { line: Vec<u8>, consumed: usize },
}

/// The line is longer than [`MAX_LINE`] (or the limit given).
#[derive(Debug, PartialEq, Eq)]
pub struct LineTooLong;

/// Assembles one reply line from reads of any size: skips the bare `\n` keepalives a master
/// sends before the line starts, ends at `\n`, drops a `\r` before it, and refuses a line
/// longer than its limit (so a server streaming bytes without a newline costs at most that).
#[derive(Debug)]
pub struct LineAssembler {
    line: Vec<u8>,
    max: usize,
    keepalives: u64,
}

impl LineAssembler {
    pub fn new(max: usize) -> Self {
        LineAssembler {
            line: Vec::new(),
            max,
            keepalives: 0,
        }
    }

    /// The keepalives skipped so far.
    pub fn keepalives(&self) -> u64 {
        self.keepalives
    }

    pub fn feed(&mut self, data: &[u8]) -> Result<Fed, LineTooLong> {
        for (i, &byte) in data.iter().enumerate() {
            if byte == b'\n' {
                if self.line.is_empty() {
                    self.keepalives += 1;
                    continue;
                }
                let mut line = std::mem::take(&mut self.line);
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                return Ok(Fed::Line {
                    line,
                    consumed: i + 1,
                });
            }
            // The `\r` before the `\n` is not counted against the limit.
            if self.line.len() > self.max || (self.line.len() == self.max && byte != b'\r') {
                return Err(LineTooLong);
            }
            self.line.push(byte);
        }
        Ok(Fed::More)
    }
}

/// A one-line reply.
#[derive(Debug, PartialEq, Eq)]
pub enum Reply {
    /// `+...`: the text after the `+`.
    Status(String),
    /// `-...`: the text after the `-` (`WRONGPASS invalid username-password pair`).
    Error(String),
}

impl Reply {
    /// The first word of an error reply (`NOAUTH`, `ERR`), empty for a status.
    pub fn code(&self) -> &str {
        match self {
            Reply::Status(_) => "",
            Reply::Error(text) => text.split(' ').next().unwrap_or(""),
        }
    }
}

/// A status or error line; anything else (a bulk, an integer, garbage) is an error naming what
/// came, shortened and printable.
pub fn parse_reply(line: &[u8]) -> Result<Reply, String> {
    let text = || printable(line.get(1..).unwrap_or_default());
    match line.first() {
        Some(b'+') => Ok(Reply::Status(text())),
        Some(b'-') => Ok(Reply::Error(text())),
        _ => Err(format!(
            "expected a status or error reply, got \"{}\"",
            printable(line)
        )),
    }
}

/// `FULLRESYNC <replid> <offset>` (the status text of PSYNC's reply): the replication ID and
/// offset the RDB is a snapshot of.
pub fn parse_fullresync(status: &str) -> Result<(String, i64), String> {
    let mut words = status.split(' ');
    let bad = || format!("expected FULLRESYNC <replid> <offset>, got {status:?}");
    if words.next() != Some("FULLRESYNC") {
        return Err(bad());
    }
    let replid = words.next().ok_or_else(bad)?;
    let offset = words.next().ok_or_else(bad)?;
    if words.next().is_some()
        || replid.is_empty()
        || replid.len() > 64
        || !replid.bytes().all(|b| b.is_ascii_alphanumeric())
    {
        return Err(bad());
    }
    let offset = offset.parse::<i64>().map_err(|_| bad())?;
    Ok((replid.to_owned(), offset))
}

/// How the RDB payload is framed.
#[derive(Debug, PartialEq, Eq)]
pub enum BulkHeader {
    /// `$<len>`: exactly `len` bytes follow (disk-based transfer).
    Length(u64),
    /// `$EOF:<40 bytes>`: the payload follows and ends with the mark (diskless transfer).
    EofMark([u8; EOF_MARK_LEN]),
}

/// The line before the payload. An error reply is the caller's to tell apart; this takes only
/// a bulk header.
pub fn parse_bulk_header(line: &[u8]) -> Result<BulkHeader, String> {
    let bad = || {
        format!(
            "expected the RDB's bulk header ($<length> or $EOF:<mark>), got \"{}\"",
            printable(line)
        )
    };
    let rest = line.strip_prefix(b"$").ok_or_else(bad)?;
    if let Some(mark) = rest.strip_prefix(b"EOF:") {
        let mark: [u8; EOF_MARK_LEN] = mark.try_into().map_err(|_| bad())?;
        return Ok(BulkHeader::EofMark(mark));
    }
    if rest.is_empty() || rest.len() > 19 || !rest.iter().all(u8::is_ascii_digit) {
        return Err(bad());
    }
    let len = std::str::from_utf8(rest)
        .ok()
        .and_then(|digits| digits.parse::<u64>().ok())
        .ok_or_else(bad)?;
    Ok(BulkHeader::Length(len))
}

/// At most 200 bytes of `bytes` as text, other bytes escaped: for error messages.
pub fn printable(bytes: &[u8]) -> String {
    let shown = &bytes[..bytes.len().min(200)];
    let mut text: String = shown.escape_ascii().to_string();
    if bytes.len() > shown.len() {
        text.push_str("...");
    }
    text
}

/// What [`EofScanner::feed`] found in a read.
#[derive(Debug, PartialEq, Eq)]
pub enum Scanned {
    /// No mark yet; the payload goes on.
    More,
    /// The mark ended the payload; `trailing` bytes of this read came after it.
    End { trailing: usize },
}

/// Finds the end of an EOF-marked payload in reads of any size and hands on the payload without
/// the mark. The last [`EOF_MARK_LEN`] bytes seen are held back until it is known whether they
/// are the start of the mark: a mark split across reads (even one byte per read) is found, and
/// no byte of it is ever handed on.
#[derive(Debug)]
pub struct EofScanner {
    mark: [u8; EOF_MARK_LEN],
    held: Vec<u8>,
}

impl EofScanner {
    pub fn new(mark: [u8; EOF_MARK_LEN]) -> Self {
        EofScanner {
            mark,
            held: Vec::with_capacity(2 * EOF_MARK_LEN),
        }
    }

    /// Takes the next read; calls `emit` with payload bytes, in order (possibly several
    /// times). After [`Scanned::End`] the scanner must not be fed again.
    pub fn feed(&mut self, data: &[u8], mut emit: impl FnMut(&[u8])) -> Scanned {
        // A mark that starts in the held bytes ends in the first bytes of `data`.
        let head = &data[..data.len().min(EOF_MARK_LEN - 1)];
        let held_len = self.held.len();
        self.held.extend_from_slice(head);
        if let Some(at) = find(&self.held, &self.mark).filter(|&at| at < held_len) {
            emit(&self.held[..at]);
            let trailing = self.held.len() - (at + EOF_MARK_LEN) + (data.len() - head.len());
            self.held.clear();
            return Scanned::End { trailing };
        }
        self.held.truncate(held_len);
        if let Some(at) = find(data, &self.mark) {
            emit(&self.held);
            emit(&data[..at]);
            self.held.clear();
            return Scanned::End {
                trailing: data.len() - at - EOF_MARK_LEN,
            };
        }
        // No mark: everything but the last EOF_MARK_LEN bytes (held and new together) is
        // payload.
        if data.len() >= EOF_MARK_LEN {
            emit(&self.held);
            let keep = data.len() - EOF_MARK_LEN;
            emit(&data[..keep]);
            self.held.clear();
            self.held.extend_from_slice(&data[keep..]);
        } else {
            let total = self.held.len() + data.len();
            let release = total.saturating_sub(EOF_MARK_LEN);
            emit(&self.held[..release]);
            self.held.drain(..release);
            self.held.extend_from_slice(data);
        }
        Scanned::More
    }
}

/// The first position of `needle` in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let first = *needle.first()?;
    let mut from = 0;
    while from + needle.len() <= haystack.len() {
        let at = from
            + haystack[from..=haystack.len() - needle.len()]
                .iter()
                .position(|&b| b == first)?;
        if haystack[at..at + needle.len()] == *needle {
            return Some(at);
        }
        from = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_arrays_of_bulk_strings() {
        assert_eq!(
            command(&[b"PSYNC", b"?", b"-1"]),
            b"*3\r\n$5\r\nPSYNC\r\n$1\r\n?\r\n$2\r\n-1\r\n"
        );
        // Binary-safe: a password with CRLF stays one argument.
        assert_eq!(
            command(&[b"AUTH", b"a\r\nb"]),
            b"*2\r\n$4\r\nAUTH\r\n$4\r\na\r\nb\r\n"
        );
    }

    fn line(bytes: Vec<u8>, consumed: usize) -> Result<Fed, LineTooLong> {
        Ok(Fed::Line {
            line: bytes,
            consumed,
        })
    }

    #[test]
    fn a_line_ends_at_newline_and_leaves_the_rest() {
        let mut lines = LineAssembler::new(MAX_LINE);
        assert_eq!(
            lines.feed(b"+OK\r\n$12\r\n"),
            line(b"+OK".to_vec(), 5),
            "the bulk header after it is not taken"
        );
        assert_eq!(lines.feed(b"$12\r\n"), line(b"$12".to_vec(), 5));
    }

    #[test]
    fn keepalives_before_a_line_are_skipped_and_counted() {
        let mut lines = LineAssembler::new(MAX_LINE);
        assert_eq!(lines.feed(b"\n\n"), Ok(Fed::More));
        assert_eq!(lines.feed(b"\n+FULLRE"), Ok(Fed::More));
        assert_eq!(
            lines.feed(b"SYNC a 1\r\n"),
            line(b"+FULLRESYNC a 1".to_vec(), 10)
        );
        assert_eq!(lines.keepalives(), 3);
    }

    #[test]
    fn a_line_split_in_single_bytes_is_assembled() {
        let mut lines = LineAssembler::new(MAX_LINE);
        let input = b"-ERR no\r\n";
        for (i, byte) in input.iter().enumerate() {
            let fed = lines.feed(std::slice::from_ref(byte));
            if i + 1 < input.len() {
                assert_eq!(fed, Ok(Fed::More));
            } else {
                assert_eq!(fed, line(b"-ERR no".to_vec(), 1));
            }
        }
    }

    #[test]
    fn a_line_longer_than_the_limit_is_refused_whatever_the_reads() {
        let mut lines = LineAssembler::new(8);
        assert_eq!(lines.feed(b"+1234567"), Ok(Fed::More));
        assert_eq!(
            lines.feed(b"\r\n"),
            line(b"+1234567".to_vec(), 2),
            "8 is allowed"
        );
        assert_eq!(lines.feed(b"+12345678"), Err(LineTooLong));
        let mut endless = LineAssembler::new(MAX_LINE);
        let chunk = [b'x'; 100];
        let mut refused = false;
        for _ in 0..20 {
            if endless.feed(&chunk) == Err(LineTooLong) {
                refused = true;
                break;
            }
        }
        assert!(refused);
        assert!(
            endless.line.len() <= MAX_LINE,
            "nothing past the limit is kept"
        );
    }

    #[test]
    fn replies_are_status_or_error() {
        assert_eq!(parse_reply(b"+OK"), Ok(Reply::Status("OK".into())));
        let error = parse_reply(b"-NOAUTH Authentication required.").expect("an error reply");
        assert_eq!(error.code(), "NOAUTH");
        assert_eq!(parse_reply(b"-").expect("empty error").code(), "");
        let garbage = parse_reply(b"\x00\xffhello").expect_err("not a reply");
        assert!(garbage.contains("\\x00\\xffhello"), "{garbage}");
        assert!(parse_reply(b"").is_err());
        assert!(parse_reply(b":1").is_err());
    }

    #[test]
    fn fullresync_gives_the_replid_and_offset() {
        let replid = "8b0a2e2f5b4ee0aa1b3a3a53a4a8e09e1f2d9c77";
        assert_eq!(
            parse_fullresync(&format!("FULLRESYNC {replid} 1234")),
            Ok((replid.to_owned(), 1234))
        );
        for bad in [
            "FULLRESYNC",
            "FULLRESYNC abc",
            "FULLRESYNC abc x",
            "FULLRESYNC abc 1 2",
            "FULLRESYNC a\"b 1",
            "FULLRESYNC  1",
            "CONTINUE abc",
            "FULLRESYNC abc 99999999999999999999999",
        ] {
            assert!(parse_fullresync(bad).is_err(), "{bad}");
        }
        let long = "a".repeat(65);
        assert!(parse_fullresync(&format!("FULLRESYNC {long} 1")).is_err());
    }

    #[test]
    fn bulk_headers_are_a_length_or_a_mark() {
        assert_eq!(parse_bulk_header(b"$0"), Ok(BulkHeader::Length(0)));
        assert!(
            parse_bulk_header(b"$18446744073709551615").is_err(),
            "20 digits"
        );
        assert_eq!(
            parse_bulk_header(b"$9999999999999999999"),
            Ok(BulkHeader::Length(9_999_999_999_999_999_999))
        );
        let mark = [b'a'; EOF_MARK_LEN];
        let mut header = b"$EOF:".to_vec();
        header.extend_from_slice(&mark);
        assert_eq!(parse_bulk_header(&header), Ok(BulkHeader::EofMark(mark)));
        for bad in [
            &b"$"[..],
            b"$-1",
            b"$+5",
            b"$ 5",
            b"$5x",
            b"5",
            b"$EOF:short",
            b"*1",
            b"",
        ] {
            assert!(parse_bulk_header(bad).is_err(), "{bad:?}");
        }
        let mut long_mark = header.clone();
        long_mark.push(b'b');
        assert!(parse_bulk_header(&long_mark).is_err());
    }

    fn mark() -> [u8; EOF_MARK_LEN] {
        let mut mark = [0; EOF_MARK_LEN];
        for (i, byte) in mark.iter_mut().enumerate() {
            *byte = b"0123456789abcdef"[i % 16];
        }
        mark
    }

    /// Feeds `stream` cut at `cuts`; (payload handed on, trailing count) or None without end.
    fn scan(stream: &[u8], cuts: &[usize]) -> (Vec<u8>, Option<usize>) {
        let mut scanner = EofScanner::new(mark());
        let mut out = Vec::new();
        let mut from = 0;
        let mut bounds: Vec<usize> = cuts.to_vec();
        bounds.push(stream.len());
        for to in bounds {
            match scanner.feed(&stream[from..to], |b| out.extend_from_slice(b)) {
                Scanned::More => {}
                Scanned::End { trailing } => {
                    let after = stream.len() - to;
                    return (out, Some(trailing + after));
                }
            }
            from = to;
        }
        (out, None)
    }

    fn payload(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 % 251) as u8).collect()
    }

    #[test]
    fn the_mark_is_found_in_one_read_and_not_handed_on() {
        let mut stream = payload(1000);
        stream.extend_from_slice(&mark());
        assert_eq!(scan(&stream, &[]), (payload(1000), Some(0)));
    }

    #[test]
    fn the_mark_split_at_every_position_across_two_reads_is_found() {
        let mut stream = payload(100);
        stream.extend_from_slice(&mark());
        for cut in 0..=stream.len() {
            assert_eq!(
                scan(&stream, &[cut]),
                (payload(100), Some(0)),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn the_mark_in_single_byte_reads_is_found() {
        let mut stream = payload(60);
        stream.extend_from_slice(&mark());
        let cuts: Vec<usize> = (1..stream.len()).collect();
        assert_eq!(scan(&stream, &cuts), (payload(60), Some(0)));
    }

    #[test]
    fn the_mark_across_three_reads_is_found() {
        let mut stream = payload(10);
        stream.extend_from_slice(&mark());
        // 5 payload bytes, then 5 + 20 bytes of mark, then the last 20.
        assert_eq!(scan(&stream, &[5, 30]), (payload(10), Some(0)));
    }

    #[test]
    fn a_payload_shorter_than_the_mark_and_an_empty_one() {
        let mut stream = payload(3);
        stream.extend_from_slice(&mark());
        assert_eq!(scan(&stream, &[1, 2]), (payload(3), Some(0)));
        assert_eq!(scan(&mark(), &[]), (Vec::new(), Some(0)));
        assert_eq!(scan(&mark(), &[39]), (Vec::new(), Some(0)));
    }

    #[test]
    fn bytes_after_the_mark_are_counted_not_handed_on() {
        let mut stream = payload(50);
        stream.extend_from_slice(&mark());
        stream.extend_from_slice(b"*1\r\n$4\r\nPING\r\n");
        for cut in [0, 20, 50, 70, 90, 95, stream.len()] {
            assert_eq!(
                scan(&stream, &[cut]),
                (payload(50), Some(14)),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn without_the_mark_only_the_last_mark_length_is_held_back() {
        let stream = payload(1000);
        let (out, end) = scan(&stream, &[10, 300, 301, 999]);
        assert_eq!(end, None);
        assert_eq!(out, &stream[..1000 - EOF_MARK_LEN]);
    }

    #[test]
    fn a_near_miss_of_the_mark_is_payload() {
        let mut near = mark();
        near[EOF_MARK_LEN - 1] = b'X';
        let mut stream = payload(10);
        stream.extend_from_slice(&near);
        stream.extend_from_slice(&payload(5));
        stream.extend_from_slice(&mark());
        let mut expected = payload(10);
        expected.extend_from_slice(&near);
        expected.extend_from_slice(&payload(5));
        for cut in 0..stream.len() {
            assert_eq!(
                scan(&stream, &[cut]),
                (expected.clone(), Some(0)),
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn find_finds_the_first_occurrence() {
        assert_eq!(find(b"abcabc", b"bc"), Some(1));
        assert_eq!(find(b"aab", b"ab"), Some(1));
        assert_eq!(find(b"ab", b"abc"), None);
        assert_eq!(find(b"", b"a"), None);
        assert_eq!(find(b"xxa", b"a"), Some(2));
    }
}
