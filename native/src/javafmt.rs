//! `Double.toString` as JDK 19+ writes it: the compiled twin of
//! `bridge.parse.binlog.javafmt.double_to_string`, for the doubles inside MySQL's binary JSON.
//!
//! Rust's `{:e}` gives the shortest digits that read back as the value, the closest among
//! equals, which is what Python's `repr` gives the pure-Python path; the layout is Java's.

/// `value` as `Double.toString(value)`, appended.
pub(crate) fn push_java_double(out: &mut String, value: f64) {
    if value.is_nan() {
        out.push_str("NaN");
        return;
    }
    if value.is_infinite() {
        out.push_str(if value > 0.0 { "Infinity" } else { "-Infinity" });
        return;
    }
    if value == 0.0 {
        out.push_str(if value.is_sign_negative() {
            "-0.0"
        } else {
            "0.0"
        });
        return;
    }
    let magnitude = value.abs();
    let (mut digits, mut sci) = split(&format!("{magnitude:e}"));
    if digits.len() == 1 {
        // Java: a one-digit shortest becomes the closest two-digit decimal that reads back.
        let two = format!("{magnitude:.1e}");
        let (two_digits, two_sci) = split(&two);
        if two.parse::<f64>() == Ok(magnitude) && two_digits.len() == 2 {
            (digits, sci) = (two_digits, two_sci);
        }
    }
    if value < 0.0 {
        out.push('-');
    }
    layout(out, &digits, sci);
}

/// `d.ddde<sci>` text -> (its digits without trailing zeros, `sci`).
fn split(text: &str) -> (String, i32) {
    let (mantissa, exponent) = text.split_once('e').unwrap_or((text, "0"));
    let mut digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    while digits.len() > 1 && digits.ends_with('0') {
        digits.pop();
    }
    (digits, exponent.parse().unwrap_or(0))
}

/// `d1.d2...dn * 10**sci` laid out as Java does: plain in [1e-3, 1e7), else `d.dddE<sci>`.
fn layout(out: &mut String, digits: &str, sci: i32) {
    if (-3..7).contains(&sci) {
        if sci >= 0 {
            let whole = sci as usize + 1;
            if digits.len() <= whole {
                out.push_str(digits);
                out.extend(std::iter::repeat_n('0', whole - digits.len()));
                out.push_str(".0");
            } else {
                out.push_str(&digits[..whole]);
                out.push('.');
                out.push_str(&digits[whole..]);
            }
        } else {
            out.push_str("0.");
            out.extend(std::iter::repeat_n('0', (-sci - 1) as usize));
            out.push_str(digits);
        }
    } else {
        out.push_str(&digits[..1]);
        out.push('.');
        out.push_str(if digits.len() > 1 { &digits[1..] } else { "0" });
        out.push('E');
        out.push_str(&sci.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn java(value: f64) -> String {
        let mut out = String::new();
        push_java_double(&mut out, value);
        out
    }

    #[test]
    fn writes_what_java_writes() {
        let cases = [
            (1.0, "1.0"),
            (100.0, "100.0"),
            (0.001, "0.001"),
            (1e-4, "1.0E-4"),
            (1e7, "1.0E7"),
            (1234567.0, "1234567.0"),
            (-2.5e-5, "-2.5E-5"),
            (f64::MIN_POSITIVE * f64::EPSILON, "4.9E-324"),
            (1e23, "1.0E23"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-0.0, "-0.0"),
            (f64::MAX, "1.7976931348623157E308"),
        ];
        for (value, text) in cases {
            assert_eq!(java(value), text, "{value:e}");
        }
    }
}
