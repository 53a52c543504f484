//! A tenant's strings as messages and logs echo them (DESIGN §9 tenancy): cut and escaped. The
//! bottom layer: validation, storage and the webhook all echo values through it.

/// Most characters of a tenant's string that a message echoes (escapes included).
pub const MAX_SHOWN_CHARS: usize = 256;

/// A tenant's string as a denial, a warning or a log line may echo it: at most
/// [`MAX_SHOWN_CHARS`] characters, then `…(N bytes)` with the whole string's size; control and
/// other unprintable characters (newlines, ANSI escapes, bidi overrides) escaped as Rust's
/// `{:?}` escapes them, so an echoed value cannot forge log lines or restyle a terminal.
/// Everything else, quotes and backslashes included, is shown as it is: `redis:7.2` stays
/// `redis:7.2`, and text that already quotes its values (a serde error) reads as before.
///
/// Requests are up to a MiB and a denial lists every broken rule: without the cut one value
/// echoed in a few messages made a multi-MiB answer and log line.
pub fn shown(value: &str) -> String {
    let mut out = String::new();
    let mut length = 0;
    let mut piece = String::new();
    for c in value.chars() {
        piece.clear();
        match c {
            // Printable as they are; `escape_debug` would add a backslash.
            '"' | '\'' | '\\' => piece.push(c),
            _ => piece.extend(c.escape_debug()),
        }
        length += piece.chars().count();
        if length > MAX_SHOWN_CHARS {
            out.push_str(&format!("…({} bytes)", value.len()));
            break;
        }
        out.push_str(&piece);
    }
    out
}

/// A list of a tenant's strings as `["a", "b"]` (as `{:?}` writes it), each [`shown`], and no
/// more of them once [`MAX_SHOWN_CHARS`] are written: then `…(N values)`.
pub fn shown_list(values: &[impl AsRef<str>]) -> String {
    let mut out = String::from("[");
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
            if out.chars().count() > MAX_SHOWN_CHARS {
                out.push_str(&format!("…({} values)", values.len()));
                break;
            }
        }
        out.push_str(&format!("\"{}\"", shown(value.as_ref())));
    }
    out.push(']');
    out
}
