//! MySQL's binary JSON rendered as canal's `JsonConversion` text: the compiled twin of
//! `bridge.parse.binlog.values._jsonb_value`, so JSON columns no longer send their tables to
//! the Python decoders.
//!
//! Whatever Python would reject (a value past the end, an unknown type, a corrupt DECIMAL)
//! or might render differently (nesting deeper than MySQL allows) declines, and the Python
//! reader decides.

use crate::digits::{push_int, push_padded};
use crate::image::{decimal_text, le_uint, Decline, Step};
use crate::javafmt::push_java_double;

/// MySQL refuses documents nested deeper than 100; anything deeper is Python's call.
const MAX_DEPTH: usize = 100;

const NEWDECIMAL: u8 = 246;
const DATE: u8 = 10;
const TIME: u8 = 11;
const DATETIME: u8 = 12;
const TIMESTAMP: u8 = 7;

/// The document `doc` (type byte, then the value) as text, appended to `out`.
/// `canal` asks for canal's spelling of the decimals in it.
pub(crate) fn push_document(doc: &[u8], canal: bool, out: &mut String) -> Step<()> {
    let (&kind, body) = doc.split_first().ok_or(Decline)?;
    Renderer { doc: body, canal }.value(kind, 0, 0, out)
}

/// A string's variable-length length in `doc` at `at` (7 bits a byte, low first) and the
/// position after it; longer than MySQL writes declines.
pub(crate) fn variable_length(doc: &[u8], mut at: usize) -> Step<(usize, usize)> {
    let mut length = 0usize;
    for shift in (0..35).step_by(7) {
        let byte = *doc.get(at).ok_or(Decline)?;
        at += 1;
        length |= usize::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((length, at));
        }
    }
    Err(Decline)
}

struct Renderer<'a> {
    doc: &'a [u8],
    canal: bool,
}

impl Renderer<'_> {
    fn bytes(&self, at: usize, size: usize) -> Step<&[u8]> {
        self.doc.get(at..at + size).ok_or(Decline)
    }

    fn uint(&self, at: usize, size: usize) -> Step<u64> {
        Ok(le_uint(self.bytes(at, size)?))
    }

    fn value(&self, kind: u8, at: usize, depth: usize, out: &mut String) -> Step<()> {
        match kind {
            0..=3 => return self.container(kind, at, depth, out),
            4 => {
                let literal = usize::from(*self.doc.get(at).ok_or(Decline)?);
                out.push_str(["null", "true", "false"].get(literal).ok_or(Decline)?);
            }
            5 => push_int(out, i64::from(self.uint(at, 2)? as u16 as i16)),
            6 => push_int(out, self.uint(at, 2)? as i64),
            7 => push_int(out, i64::from(self.uint(at, 4)? as u32 as i32)),
            8 => push_int(out, self.uint(at, 4)? as i64),
            9 => push_int(out, self.uint(at, 8)? as i64),
            10 => push_padded(out, self.uint(at, 8)?, 0),
            11 => push_java_double(out, f64::from_bits(self.uint(at, 8)?)),
            12 => {
                let (length, at) = self.length(at)?;
                push_quoted(out, self.bytes(at, length)?);
            }
            15 => {
                let field_type = *self.doc.get(at).ok_or(Decline)?;
                let (length, at) = self.length(at + 1)?;
                return self.opaque(field_type, self.bytes(at, length)?, out);
            }
            _ => return Err(Decline),
        }
        Ok(())
    }

    /// An object or array, small (16-bit offsets) or large (32-bit); offsets count from `at`.
    fn container(&self, kind: u8, at: usize, depth: usize, out: &mut String) -> Step<()> {
        if depth >= MAX_DEPTH {
            return Err(Decline);
        }
        let (large, is_object) = (kind & 1 == 1, kind < 2);
        let osize = if large { 4 } else { 2 };
        let count = self.uint(at, osize)? as usize;
        let entries_at = at + 2 * osize;
        let values_at = entries_at + if is_object { count * (osize + 2) } else { 0 };
        out.push(if is_object { '{' } else { '[' });
        for i in 0..count {
            if i > 0 {
                out.push_str(", ");
            }
            if is_object {
                // canal neither escapes keys nor stops at NUL bytes in them.
                let entry = entries_at + i * (osize + 2);
                let key_at = at + self.uint(entry, osize)? as usize;
                let key_len = self.uint(entry + osize, 2)? as usize;
                out.push('"');
                out.push_str(
                    std::str::from_utf8(self.bytes(key_at, key_len)?).map_err(|_| Decline)?,
                );
                out.push_str("\": ");
            }
            let entry = values_at + i * (1 + osize);
            let value_kind = *self.doc.get(entry).ok_or(Decline)?;
            let inline = matches!(value_kind, 4..=6) || (large && matches!(value_kind, 7 | 8));
            let value_at = if inline {
                entry + 1
            } else {
                at + self.uint(entry + 1, osize)? as usize
            };
            self.value(value_kind, value_at, depth + 1, out)?;
        }
        out.push(if is_object { '}' } else { ']' });
        Ok(())
    }

    fn length(&self, at: usize) -> Step<(usize, usize)> {
        variable_length(self.doc, at)
    }

    /// A value MySQL stores as an opaque field: DECIMAL, temporal values, or raw text.
    fn opaque(&self, field_type: u8, raw: &[u8], out: &mut String) -> Step<()> {
        match field_type {
            NEWDECIMAL => {
                let (precision, scale) = (raw.first().ok_or(Decline)?, raw.get(1).ok_or(Decline)?);
                decimal_text(
                    raw,
                    2,
                    usize::from(*precision),
                    usize::from(*scale),
                    self.canal,
                    out,
                )?;
                Ok(())
            }
            DATE | TIME | DATETIME | TIMESTAMP => {
                push_temporal(
                    out,
                    field_type == TIME,
                    le_uint(raw.get(..8).ok_or(Decline)?) as i64,
                );
                Ok(())
            }
            _ => {
                // canal's getFixString: the text up to the first NUL.
                let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
                push_quoted(out, &raw[..end]);
                Ok(())
            }
        }
    }
}

/// A packed MySQL temporal value, quoted: TIME as `[-]hh:mm:ss.ffffff`, the others as
/// `yyyy-mm-dd hh:mm:ss.ffffff` (no sign: canal drops it), zero as canal writes zero.
fn push_temporal(out: &mut String, time: bool, packed: i64) {
    out.push('"');
    if packed == 0 {
        out.push_str(if time {
            "00:00:00"
        } else {
            "0000-00-00 00:00:00"
        });
        out.push('"');
        return;
    }
    let magnitude = packed.unsigned_abs();
    let (intpart, frac) = (magnitude >> 24, magnitude & 0xff_ffff);
    let hms = if time { intpart } else { intpart & 0x1ffff };
    if time {
        if packed < 0 {
            out.push('-');
        }
        push_padded(out, hms >> 12 & 1023, 2);
    } else {
        let ymd = intpart >> 17;
        let ym = ymd >> 5;
        push_padded(out, ym / 13, 4);
        out.push('-');
        push_padded(out, ym % 13, 2);
        out.push('-');
        push_padded(out, ymd & 31, 2);
        out.push(' ');
        push_padded(out, hms >> 12, 2);
    }
    out.push(':');
    push_padded(out, hms >> 6 & 63, 2);
    out.push(':');
    push_padded(out, hms & 63, 2);
    out.push('.');
    push_padded(out, frac, 6);
    out.push('"');
}

/// UTF-8 `raw` in quotes, with only backslash and quote escaped (canal's rendering); each
/// invalid sequence becomes U+FFFD, as Python's "replace" makes it.
fn push_quoted(out: &mut String, raw: &[u8]) {
    let text = String::from_utf8_lossy(raw);
    out.push('"');
    for c in text.chars() {
        if c == '\\' || c == '"' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
}
