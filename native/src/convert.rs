//! The compiled twin of `bridge.parse.convert.EventConverter.flat_entries` over the events
//! of one read: a GTID (MariaDB's, MySQL's untagged or anonymous), a BEGIN, an XID, a
//! TABLE_MAP the converter already has, and a rows event whose record the compiled path
//! writes (`event.rs`) become the tuples
//! `bridge.parse.entry_codec` carries, in one call, without a Python frame per event. The first
//! event of any other kind, or one that fails a check, is left to the Python path, which
//! converts it, or raises what it raises, as without this loop.
//!
//! The converter's state is read from it at the start (file name, GTID, last TABLE_MAP, the
//! tables by id, the rows event layouts) and what changed is written back at the end.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple};

use crate::digits::{push_int, Digits};
use crate::event::event_parts;
use crate::flat::{What, DELETE, INSERT, UPDATE};
use crate::framing::{CHECKSUM_SIZE, HEADER_SIZE};
use crate::image::le_uint;

const TABLE_MAP_EVENT: u8 = 19;
const XID_EVENT: u8 = 16;
const MARIADB_GTID_EVENT: u8 = 162;
const MARIADB_GTID_STANDALONE: u8 = 0x01;
const QUERY_EVENT: u8 = 2;
const GTID_LOG_EVENT: u8 = 33;
const ANONYMOUS_GTID_LOG_EVENT: u8 = 34;
const GNO_MAX: i64 = i64::MAX - 1;
const LOGICAL_CLOCK_TYPE: u8 = 2;
const HAS_ORIGINAL_TIMESTAMP: u64 = 1 << 55;
const HAS_ORIGINAL_VERSION: u64 = 1 << 31;

/// The little-endian unsigned integer of `size` bytes at `at` of `data`.
fn uint_at(data: &[u8], at: usize, size: usize) -> u64 {
    le_uint(&data[at..at + size])
}

/// The GTID a MySQL GTID_LOG_EVENT body (checksum excluded) names as
/// `bridge.parse.binlog.gtid.GtidEvent.text` prints it, "" for an ANONYMOUS_GTID_LOG_EVENT's;
/// None where `decode_gtid_event` raises (a GNO out of range, a group cut short), so that the
/// Python path raises it. Each optional group after the GNO is checked only if the body goes
/// on, as there.
fn mysql_gtid(body: &[u8], anonymous: bool) -> Option<String> {
    let gno = i64::from_le_bytes(body.get(17..25)?.try_into().ok()?);
    let valid = if anonymous {
        gno == 0
    } else {
        (1..=GNO_MAX).contains(&gno)
    };
    if !valid {
        return None;
    }
    let mut at = 25;
    if body.len() > at {
        let clock = body[at];
        at += 1;
        if clock == LOGICAL_CLOCK_TYPE {
            at += 16; // last_committed, sequence_number
            if body.len() < at {
                return None;
            }
            if body.len() > at {
                tail_groups(body, at)?;
            }
        }
    }
    if anonymous {
        return Some(String::new());
    }
    // Written by hand: formatting each byte with `format!` was a fifth of the loop's time on
    // one-row transactions.
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(36 + 1 + 19);
    for (i, &byte) in body[1..17].iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            text.push('-');
        }
        text.push(char::from(HEX[usize::from(byte >> 4)]));
        text.push(char::from(HEX[usize::from(byte & 0xF)]));
    }
    text.push(':');
    push_int(&mut text, gno);
    Some(text)
}

/// The groups of a GTID event after its logical clock, from `at`: commit timestamps,
/// transaction length, server versions, commit group ticket; None when one is cut short.
fn tail_groups(body: &[u8], mut at: usize) -> Option<()> {
    let end = body.len();
    let timestamp = le_uint(body.get(at..at + 7)?);
    at += if timestamp & HAS_ORIGINAL_TIMESTAMP != 0 {
        14
    } else {
        7
    };
    if at >= end {
        return (at == end).then_some(());
    }
    (_, at) = packed_int(body, at, end)?;
    if at >= end {
        return Some(());
    }
    let version = le_uint(body.get(at..at + 4)?);
    at += if version & HAS_ORIGINAL_VERSION != 0 {
        8
    } else {
        4
    };
    let ticket_cut_short = at < end && at + 8 > end;
    (at <= end && !ticket_cut_short).then_some(())
}

/// Whether a QUERY event (checksum excluded, ending at `end`) holds exactly `BEGIN`, read as
/// `bridge.parse.binlog.events.query` does with the format's QUERY post-header length.
fn is_begin(data: &[u8], end: usize, post_header: usize) -> bool {
    let at = HEADER_SIZE;
    if end < at + post_header || post_header < 13 {
        return false;
    }
    let schema_length = usize::from(data[at + 8]);
    let status_length = uint_at(data, at + 11, 2) as usize;
    let sql_at = at + post_header + status_length + schema_length + 1;
    sql_at <= end && &data[sql_at..end] == b"BEGIN"
}

/// A packed integer at `pos` (never read at or past `end`) and the position after it; None
/// where `bridge.parse.binlog.packed.read_packed_int` raises.
pub(crate) fn packed_int(data: &[u8], pos: usize, end: usize) -> Option<(u64, usize)> {
    let first = *data.get(pos).filter(|_| pos < end)?;
    let size = match first {
        0..=250 => return Some((u64::from(first), pos + 1)),
        252 => 2,
        253 => 3,
        254 => 8,
        _ => return None,
    };
    if pos + 1 + size > end {
        return None;
    }
    Some((uint_at(data, pos + 1, size), pos + 1 + size))
}

/// The fields of an event's header: timestamp, type, server id, size, log_pos.
struct EventHeader {
    timestamp: u32,
    code: u8,
    server_id: u32,
    size: u32,
    log_pos: u32,
}

impl EventHeader {
    fn of(data: &[u8]) -> Self {
        Self {
            timestamp: uint_at(data, 0, 4) as u32,
            code: data[4],
            server_id: uint_at(data, 5, 4) as u32,
            size: uint_at(data, 9, 4) as u32,
            log_pos: uint_at(data, 13, 4) as u32,
        }
    }

    fn offset(&self) -> i64 {
        i64::from(self.log_pos) - i64::from(self.size)
    }

    fn execute_time(&self) -> i64 {
        i64::from(self.timestamp) * 1000
    }
}

/// A rows event type's layout (`EventConverter._rows_layouts`), as the loop reads it.
#[derive(Clone)]
struct Layout<'py> {
    code: u8,
    kind: u8,
    post_header: usize,
    v2: bool,
    event_type_name: Bound<'py, PyAny>,
}

/// What the loop reads of a table's decoder for its rows events.
#[derive(Clone)]
struct Table<'py> {
    id: u64,
    columns: usize,
    plans: Bound<'py, PyDict>,
    schema_name: Bound<'py, PyAny>,
    table_name: Bound<'py, PyAny>,
}

/// The last layout and table the loop looked up: one-row transactions repeat them event
/// after event, and each lookup is a dict and half a dozen attributes of Python objects.
/// Kept for one call only: the converter's tables and plans change only on the Python
/// path, between calls.
#[derive(Default)]
struct Memo<'py> {
    layout: Option<Layout<'py>>,
    table: Option<Table<'py>>,
    /// The table's plans found so far, by their image bitmap (a few at most).
    plans: Vec<(Vec<u8>, Bound<'py, PyAny>)>,
}

/// How many plans of its table the memo keeps.
const MEMO_PLANS: usize = 4;

impl<'py> Memo<'py> {
    /// The plan of the image whose bitmap is `bitmap` in `plans` (its table's), kept.
    fn plan(
        &mut self,
        plans: &Bound<'py, PyDict>,
        bitmap: &[u8],
    ) -> PyResult<Option<Bound<'py, PyAny>>> {
        if let Some((_, plan)) = self.plans.iter().find(|(kept, _)| kept == bitmap) {
            return Ok(Some(plan.clone()));
        }
        let found = plans.get_item(PyBytes::new(plans.py(), bitmap))?;
        if let Some(plan) = &found {
            if self.plans.len() < MEMO_PLANS {
                self.plans.push((bitmap.to_vec(), plan.clone()));
            }
        }
        Ok(found)
    }
}

/// What the loop reads of the converter once per call, and the state it carries.
struct Converter<'py> {
    journal: Bound<'py, PyAny>,
    gtid: Bound<'py, PyAny>,
    gtid_changed: bool,
    /// Whether a transaction's GTID gives a TRANSACTIONBEGIN entry (the converter's `_begins`).
    begins: bool,
    /// The QUERY event's post-header length (the converter's `_query_post_header`).
    query_post_header: usize,
    last_log_pos: Option<u32>,
    last_table_map: Bound<'py, PyBytes>,
    tables: Bound<'py, PyDict>,
    layouts: Bound<'py, PyDict>,
}

impl<'py> Converter<'py> {
    fn read(converter: &Bound<'py, PyAny>) -> PyResult<Self> {
        let py = converter.py();
        Ok(Self {
            journal: converter.getattr(intern!(py, "_journal"))?,
            gtid: converter.getattr(intern!(py, "_gtid"))?,
            gtid_changed: false,
            begins: converter.getattr(intern!(py, "_begins"))?.extract()?,
            query_post_header: converter
                .getattr(intern!(py, "_query_post_header"))?
                .extract()?,
            last_log_pos: None,
            last_table_map: converter
                .getattr(intern!(py, "_last_table_map"))?
                .cast_into()?,
            tables: converter.getattr(intern!(py, "_raw_tables"))?.cast_into()?,
            layouts: converter
                .getattr(intern!(py, "_rows_layouts"))?
                .cast_into()?,
        })
    }

    fn write(&self, converter: &Bound<'py, PyAny>) -> PyResult<()> {
        let py = converter.py();
        if self.gtid_changed {
            converter.setattr(intern!(py, "_gtid"), &self.gtid)?;
        }
        if let Some(log_pos) = self.last_log_pos {
            converter.setattr(intern!(py, "_last_log_pos"), log_pos)?;
        }
        Ok(())
    }

    /// An entry's tuple as `bridge.parse.entry_codec` carries it (`FlatEntry`): the event's
    /// position and header fields with the current file and GTID, then the given table, event
    /// type, entry type, transaction id and row change.
    #[allow(clippy::too_many_arguments)]
    fn entry(
        &self,
        py: Python<'py>,
        header: &EventHeader,
        schema_name: Bound<'py, PyAny>,
        table_name: Bound<'py, PyAny>,
        event_type: Bound<'py, PyAny>,
        entry_type: &Bound<'py, PyString>,
        transaction_id: Bound<'py, PyString>,
        change: Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(
            py,
            [
                self.journal.clone(),
                header.offset().into_pyobject(py)?.into_any(),
                header.server_id.into_pyobject(py)?.into_any(),
                header.execute_time().into_pyobject(py)?.into_any(),
                schema_name,
                table_name,
                event_type,
                self.gtid.clone(),
                header.size.into_pyobject(py)?.into_any(),
                entry_type.clone().into_any(),
                transaction_id.into_any(),
                change,
            ],
        )
    }

    /// A BEGIN or END entry's tuple (`EventConverter.flat_entries`).
    fn marker(
        &self,
        py: Python<'py>,
        header: &EventHeader,
        kind: &Bound<'py, PyString>,
        transaction_id: Bound<'py, PyString>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let empty = intern!(py, "").clone().into_any();
        let none = py.None().into_bound(py);
        self.entry(
            py,
            header,
            empty.clone(),
            empty,
            none.clone(),
            kind,
            transaction_id,
            none,
        )
    }

    /// The rows layout of event type `code` (`EventConverter._rows_layouts`), from `memo`
    /// when the event before was of the same type; None for other events and for a
    /// PARTIAL_UPDATE (its JSON diffs are applied in Python).
    fn layout(&self, memo: &mut Memo<'py>, code: u8) -> PyResult<Option<Layout<'py>>> {
        if let Some(layout) = memo.layout.as_ref().filter(|layout| layout.code == code) {
            return Ok(Some(layout.clone()));
        }
        let Some(found) = self.layouts.get_item(code)? else {
            return Ok(None);
        };
        let (event_type, kind_name, post_header, v2): (
            Bound<'py, PyAny>,
            Bound<'py, PyString>,
            usize,
            bool,
        ) = found.extract()?;
        let kind = match kind_name.to_str()? {
            "insert" => INSERT,
            "update" => UPDATE,
            "delete" => DELETE,
            _ => return Ok(None),
        };
        let event_type_name = event_type.getattr(intern!(event_type.py(), "_value_"))?;
        let layout = Layout {
            code,
            kind,
            post_header,
            v2,
            event_type_name,
        };
        memo.layout = Some(layout.clone());
        Ok(Some(layout))
    }

    /// What the rows events of table `table_id` are read with: its decoder's column count,
    /// plans and names (the converter's `_raw_tables`), from `memo` when the event before
    /// was of the same table; None for a table without a decoder.
    fn table(&self, memo: &mut Memo<'py>, table_id: u64) -> PyResult<Option<Table<'py>>> {
        if let Some(table) = memo.table.as_ref().filter(|table| table.id == table_id) {
            return Ok(Some(table.clone()));
        }
        let Some(cached) = self.tables.get_item(table_id)? else {
            return Ok(None);
        };
        let py = cached.py();
        let decoder = cached.getattr(intern!(py, "decoder"))?;
        let names = decoder.getattr(intern!(py, "table"))?;
        let table = Table {
            id: table_id,
            // RowDecoder.images: the column count, then each image's plan by its bitmap.
            columns: decoder.getattr(intern!(py, "_steps"))?.len()?,
            plans: decoder.getattr(intern!(py, "_plans"))?.cast_into()?,
            schema_name: names.getattr(intern!(py, "schema"))?,
            table_name: names.getattr(intern!(py, "table"))?,
        };
        memo.table = Some(table.clone());
        memo.plans.clear();
        Ok(Some(table))
    }

    /// The ROWDATA tuple of a rows event whose record the compiled path writes; None where
    /// the Python path must convert it (a check fails, or the compiled path declines).
    fn rows(
        &self,
        py: Python<'py>,
        memo: &mut Memo<'py>,
        data: &[u8],
        header: &EventHeader,
        checksum: bool,
        limit: usize,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(layout) = self.layout(memo, header.code)? else {
            return Ok(None);
        };
        let kind = layout.kind;
        let end = data.len() - if checksum { CHECKSUM_SIZE } else { 0 };
        if end < HEADER_SIZE + 10 {
            return Ok(None);
        }
        let table_id = uint_at(data, HEADER_SIZE, 6);
        let Some(table) = self.table(memo, table_id)? else {
            return Ok(None);
        };
        let mut pos = layout.post_header;
        if layout.v2 {
            pos += (uint_at(data, HEADER_SIZE + 8, 2) as usize).saturating_sub(2);
        }
        let Some((columns, pos)) = packed_int(data, pos, end) else {
            return Ok(None);
        };
        let count = table.columns;
        if columns != count as u64 || pos > end {
            return Ok(None);
        }
        let body = &data[pos..end];
        let bitmap = count.div_ceil(8);
        let mut plan_at = |at: usize| -> PyResult<Option<Bound<'py, PyAny>>> {
            if body.len() < at + bitmap {
                return Ok(None);
            }
            memo.plan(&table.plans, &body[at..at + bitmap])
        };
        let Some(before) = plan_at(0)? else {
            return Ok(None);
        };
        let (after, images) = if kind == UPDATE {
            let Some(after) = plan_at(bitmap)? else {
                return Ok(None);
            };
            (after, 2 * bitmap)
        } else {
            (before.clone(), bitmap)
        };
        let (schema_name, table_name) = (table.schema_name, table.table_name);
        let event_type_name = layout.event_type_name;
        let what = What {
            database: schema_name.cast::<PyString>()?.to_str()?,
            table: table_name.cast::<PyString>()?.to_str()?,
            kind,
            event_type: event_type_name.cast::<PyString>()?.to_str()?,
            es: header.execute_time(),
            sql: "",
            gtid: self.gtid.cast::<PyString>()?.to_str()?,
        };
        let Some(parts) = event_parts(py, &what, &before, &after, body, images, limit)? else {
            return Ok(None);
        };
        let empty = intern!(py, "");
        let change = (
            event_type_name.clone(),
            false,
            empty.clone(),
            empty.clone(),
            parts,
        )
            .into_pyobject(py)?;
        Ok(Some(self.entry(
            py,
            header,
            schema_name,
            table_name,
            event_type_name,
            intern!(py, "ROWDATA"),
            empty.clone(),
            change.into_any(),
        )?))
    }
}

/// Converts the events of `events` from `at` on into `out` as
/// `EventConverter.flat_entries` would, rows events' records written by the compiled path
/// with `limit`, until `out` holds `room` entries, and returns the index of the first event
/// it did not take (`len(events)` when it took them all): one left to the Python path, or
/// the next one once `out` is full.
#[pyfunction]
pub fn flat_events<'py>(
    converter: &Bound<'py, PyAny>,
    events: &Bound<'py, PyList>,
    at: usize,
    checksum: bool,
    limit: usize,
    out: &Bound<'py, PyList>,
    room: usize,
) -> PyResult<usize> {
    let py = converter.py();
    let mut state = Converter::read(converter)?;
    let mut memo = Memo::default();
    let mut next = at;
    while next < events.len() && out.len() < room {
        let item = events.get_item(next)?;
        let data = item.cast::<PyBytes>()?.as_bytes();
        if data.len() < HEADER_SIZE + if checksum { CHECKSUM_SIZE } else { 0 } {
            break;
        }
        let header = EventHeader::of(data);
        match header.code {
            TABLE_MAP_EVENT => {
                let end = data.len() - if checksum { CHECKSUM_SIZE } else { 0 };
                if data[HEADER_SIZE..end] != *state.last_table_map.as_bytes() {
                    break; // a new map: the Python path builds its decoder
                }
            }
            XID_EVENT if data.len() >= HEADER_SIZE + 8 => {
                let xid = Digits::new(uint_at(data, HEADER_SIZE, 8), 0);
                let xid = PyString::new(py, xid.as_str());
                let end = intern!(py, "TRANSACTIONEND");
                out.append(state.marker(py, &header, end, xid)?)?;
                if header.log_pos != 0 {
                    state.last_log_pos = Some(header.log_pos);
                }
            }
            MARIADB_GTID_EVENT if data.len() >= HEADER_SIZE + 13 => {
                let sequence = uint_at(data, HEADER_SIZE, 8);
                let domain = uint_at(data, HEADER_SIZE + 8, 4);
                let flags = data[HEADER_SIZE + 12];
                let mut text = String::with_capacity(32);
                text.push_str(Digits::new(domain, 0).as_str());
                text.push('-');
                text.push_str(Digits::new(u64::from(header.server_id), 0).as_str());
                text.push('-');
                text.push_str(Digits::new(sequence, 0).as_str());
                state.gtid = PyString::new(py, &text).into_any();
                state.gtid_changed = true;
                if header.log_pos != 0 {
                    state.last_log_pos = Some(header.log_pos);
                }
                // A standalone GTID (a DDL's) opens no transaction: its statement is the entry.
                if state.begins && flags & MARIADB_GTID_STANDALONE == 0 {
                    let begin = intern!(py, "TRANSACTIONBEGIN");
                    out.append(state.marker(py, &header, begin, PyString::new(py, ""))?)?;
                }
            }
            GTID_LOG_EVENT | ANONYMOUS_GTID_LOG_EVENT => {
                let end = data.len() - if checksum { CHECKSUM_SIZE } else { 0 };
                let anonymous = header.code == ANONYMOUS_GTID_LOG_EVENT;
                let Some(text) = mysql_gtid(&data[HEADER_SIZE..end], anonymous) else {
                    break; // the Python path raises what is wrong with it
                };
                state.gtid = PyString::new(py, &text).into_any();
                state.gtid_changed = true;
                if header.log_pos != 0 {
                    state.last_log_pos = Some(header.log_pos);
                }
            }
            QUERY_EVENT => {
                let end = data.len() - if checksum { CHECKSUM_SIZE } else { 0 };
                if !is_begin(data, end, state.query_post_header) {
                    break; // a statement: the Python path converts it
                }
                if header.log_pos != 0 {
                    state.last_log_pos = Some(header.log_pos);
                }
                if state.begins {
                    let begin = intern!(py, "TRANSACTIONBEGIN");
                    out.append(state.marker(py, &header, begin, PyString::new(py, ""))?)?;
                }
            }
            _ => match state.rows(py, &mut memo, data, &header, checksum, limit)? {
                Some(entry) => out.append(entry)?,
                None => break,
            },
        }
        next += 1;
    }
    state.write(converter)?;
    Ok(next)
}
