//! JSON text exactly as orjson writes it (the pure-Python path's serialiser), so both paths
//! give the same bytes: only `"`, `\` and control characters are escaped, the five usual ones
//! by their short form and the rest as lowercase `\u00xx`; everything else is copied as UTF-8.

use crate::digits::Digits;

const HEX: &[u8; 16] = b"0123456789abcdef";

pub fn write_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Most texts need no escape at all: one scan, one copy.
    if !bytes.iter().any(|&b| b == b'"' || b == b'\\' || b < 0x20) {
        out.extend_from_slice(bytes);
        out.push(b'"');
        return;
    }
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let short: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            0x08 => b"\\b",
            0x09 => b"\\t",
            0x0a => b"\\n",
            0x0c => b"\\f",
            0x0d => b"\\r",
            0x00..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if short.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(short);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

pub fn write_opt_str(out: &mut Vec<u8>, text: Option<&str>) {
    match text {
        Some(text) => write_str(out, text),
        None => out.extend_from_slice(b"null"),
    }
}

pub fn write_int(out: &mut Vec<u8>, value: i64) {
    out.extend_from_slice(Digits::signed(value).as_str().as_bytes());
}

/// `"name":` with the separating comma unless it is the first member.
pub fn write_key(out: &mut Vec<u8>, first: bool, name: &str) {
    if !first {
        out.push(b',');
    }
    write_str(out, name);
    out.push(b':');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, s);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn escapes_like_orjson() {
        assert_eq!(text("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(text("\u{0}\u{1f}\u{7f}"), "\"\\u0000\\u001f\u{7f}\"");
        assert_eq!(text("\t\n\r\u{8}\u{c}/é😀"), "\"\\t\\n\\r\\b\\f/é😀\"");
    }
}
