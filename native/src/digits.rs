//! Integers as decimal text without `core::fmt`: its machinery (a `Formatter`, padding,
//! a call through `dyn Write`) was a fifth of the time of writing a row's record.

/// The decimal digits of a number (after a `-` when negative), zero-padded to a width, in a
/// buffer of their own.
pub struct Digits {
    buf: [u8; 21],
    start: usize,
}

impl Digits {
    /// `value`'s digits, at least `width` of them (`{value:0width$}`); `width` at most 20.
    pub fn new(value: u64, width: usize) -> Self {
        Self::written(value, width, false)
    }

    /// `value` in decimal (`{value}`).
    pub fn signed(value: i64) -> Self {
        Self::written(value.unsigned_abs(), 0, value < 0)
    }

    fn written(mut value: u64, width: usize, negative: bool) -> Self {
        let mut buf = [b'0'; 21];
        let mut start = buf.len();
        loop {
            start -= 1;
            buf[start] = b'0' + (value % 10) as u8;
            value /= 10;
            if value == 0 {
                break;
            }
        }
        start = start.min(buf.len() - width.min(20));
        if negative {
            start -= 1;
            buf[start] = b'-';
        }
        Digits { buf, start }
    }

    pub fn as_str(&self) -> &str {
        // Only ASCII digits and a minus sign were written.
        std::str::from_utf8(&self.buf[self.start..]).unwrap_or_default()
    }
}

/// `value` in decimal (`{value}`), appended.
pub fn push_int(out: &mut String, value: i64) {
    out.push_str(Digits::signed(value).as_str());
}

/// `value` zero-padded to `width` digits (`{value:0width$}`), appended.
pub fn push_padded(out: &mut String, value: u64, width: usize) {
    out.push_str(Digits::new(value, width).as_str());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_what_format_writes() {
        for value in [0u64, 7, 10, 99, 100, 12345, u64::MAX] {
            for width in [0, 1, 2, 4, 6, 9, 20] {
                assert_eq!(
                    Digits::new(value, width).as_str(),
                    format!("{value:0width$}")
                );
            }
        }
        for value in [0i64, -1, 42, i64::MIN, i64::MAX] {
            let mut out = String::new();
            push_int(&mut out, value);
            assert_eq!(out, value.to_string());
        }
    }
}
