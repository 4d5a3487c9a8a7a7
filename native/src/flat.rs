//! canal's FlatMessage JSON and the record key of one rows event, written straight from the
//! parser's decoded rows (`bridge.parse.binlog.rows.DecodedRow`): no per-row dicts, no FlatMessage
//! object. Mirrors `bridge.mq.flat_message._decoded_rows` / `_old_values` and
//! `bridge.mq.records.message_key` byte for byte; anything it does not expect (a value that
//! is not a str or None, images that do not line up) returns None and the caller takes the
//! pure-Python path, which then says what is wrong.

use std::cell::RefCell;
use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use crate::json::{write_int, write_key, write_opt_str, write_str};

pub const INSERT: u8 = 0;
pub const UPDATE: u8 = 1;
pub const DELETE: u8 = 2;

type Text<'py> = Option<Bound<'py, PyString>>;

/// One image of a row: its plan (None: the row has no such image), values and sql types.
struct Image<'py> {
    plan: Option<Bound<'py, PyAny>>,
    values: Bound<'py, PyTuple>,
    types: Bound<'py, PyTuple>,
}

fn image<'py>(row: &Bound<'py, PyAny>, before: bool) -> PyResult<Option<Image<'py>>> {
    let py = row.py();
    let (plan, values, types) = if before {
        (
            intern!(py, "old_plan"),
            intern!(py, "old_values"),
            intern!(py, "old_types"),
        )
    } else {
        (
            intern!(py, "new_plan"),
            intern!(py, "new_values"),
            intern!(py, "new_types"),
        )
    };
    let plan = row.getattr(plan)?;
    let (Ok(values), Ok(types)) = (
        row.getattr(values)?.cast_into::<PyTuple>(),
        row.getattr(types)?.cast_into::<PyTuple>(),
    ) else {
        return Ok(None);
    };
    let plan = if plan.is_none() { None } else { Some(plan) };
    Ok(Some(Image {
        plan,
        values,
        types,
    }))
}

fn text<'py>(item: Bound<'py, PyAny>) -> Option<Text<'py>> {
    if item.is_none() {
        Some(None)
    } else {
        item.cast_into::<PyString>().ok().map(Some)
    }
}

fn texts<'py>(tuple: &Bound<'py, PyTuple>) -> Option<Vec<Text<'py>>> {
    tuple.iter().map(text).collect()
}

fn strings_of(tuple: &Bound<'_, PyAny>) -> PyResult<Option<Vec<String>>> {
    let Ok(tuple) = tuple.cast::<PyTuple>() else {
        return Ok(None);
    };
    let mut strings = Vec::with_capacity(tuple.len());
    for item in tuple.iter() {
        let Ok(item) = item.cast_into::<PyString>() else {
            return Ok(None);
        };
        strings.push(item.to_str()?.to_owned());
    }
    Ok(Some(strings))
}

/// What a message needs of a plan (``bridge.parse.binlog.rows.Plan``): names, MySQL types and key
/// flags as Rust strings, and the key columns' names and positions. Made once per plan and
/// kept on it (its ``flat`` slot), so a message does not read them from Python again.
#[pyclass(frozen)]
pub struct PlanInfo {
    pub(crate) names: Vec<String>,
    /// Each name as a JSON object key (`"name":`), and the ``mysqlType`` object.
    keys: Vec<Vec<u8>>,
    mysql_types_json: Vec<u8>,
    mysql_types: Vec<String>,
    pub(crate) pk_names: Vec<String>,
    pub(crate) pk_positions: Vec<Option<usize>>,
}

/// The ``PlanInfo`` of a plan, made and kept on first use; None when the plan's names,
/// MySQL types or keys are not what the Python path would accept (it then decides).
pub(crate) fn plan_info<'py>(plan: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PlanInfo>>> {
    let py = plan.py();
    let kept = plan.getattr(intern!(py, "flat"))?;
    if let Ok(info) = kept.cast_into::<PlanInfo>() {
        return Ok(Some(info));
    }
    let (Some(names), Some(mysql_types)) = (
        strings_of(&plan.getattr(intern!(py, "names"))?)?,
        strings_of(&plan.getattr(intern!(py, "mysql_types"))?)?,
    ) else {
        return Ok(None);
    };
    let keys = plan.getattr(intern!(py, "keys"))?;
    let Ok(keys) = keys.cast_into::<PyTuple>() else {
        return Ok(None);
    };
    if keys.len() != names.len() || mysql_types.len() != names.len() {
        return Ok(None);
    }
    let mut pk_names = Vec::new();
    for (name, key) in names.iter().zip(keys.iter()) {
        if key.is_truthy()? {
            pk_names.push(name.clone());
        }
    }
    let pk_positions = pk_names
        .iter()
        .map(|pk| names.iter().position(|n| n == pk))
        .collect();
    let json_keys: Vec<Vec<u8>> = names
        .iter()
        .map(|name| {
            let mut key = Vec::with_capacity(name.len() + 3);
            write_key(&mut key, true, name);
            key
        })
        .collect();
    let mut mysql_types_json = Vec::new();
    write_pairs(&mut mysql_types_json, &json_keys, &mysql_types, |out, v| {
        write_str(out, v);
    });
    let info = Bound::new(
        py,
        PlanInfo {
            names,
            keys: json_keys,
            mysql_types_json,
            mysql_types,
            pk_names,
            pk_positions,
        },
    )?;
    plan.setattr(intern!(py, "flat"), &info)?;
    Ok(Some(info))
}

/// The texts of an image as `&str`s (None for NULL), as the writers below take them.
fn strs<'a>(texts: &'a [Text<'_>]) -> PyResult<Vec<Option<&'a str>>> {
    texts
        .iter()
        .map(|t| t.as_ref().map(|v| v.to_str()).transpose())
        .collect()
}

/// Python's ``dict.update``: a name keeps its first position, its value is the latest.
fn upsert<V>(map: &mut Vec<(String, V)>, name: &str, value: V) {
    match map.iter_mut().find(|(n, _)| n == name) {
        Some(slot) => slot.1 = value,
        None => map.push((name.to_owned(), value)),
    }
}

/// A JSON object of ``keys`` (``PlanInfo::keys``) and values, in order.
fn write_pairs<V>(
    out: &mut Vec<u8>,
    keys: &[Vec<u8>],
    values: impl IntoIterator<Item = V>,
    write_value: impl Fn(&mut Vec<u8>, V),
) {
    out.push(b'{');
    for (i, (key, value)) in keys.iter().zip(values).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(key);
        write_value(out, value);
    }
    out.push(b'}');
}

fn write_object(out: &mut Vec<u8>, keys: &[Vec<u8>], values: &[Option<&str>]) {
    write_pairs(out, keys, values, |out, v| write_opt_str(out, *v));
}

/// An UPDATE row's ``old``: the before-image texts of the columns whose value changed.
/// ``same_plan``: both images have the same present columns (then they line up one to one);
/// None where the images do not line up as their plans say.
pub(crate) fn write_changed(
    out: &mut Vec<u8>,
    before: &PlanInfo,
    olds: &[Option<&str>],
    same_plan: bool,
    names: &[String],
    values: &[Option<&str>],
) -> Option<()> {
    if before.names.len() != olds.len() || (same_plan && values.len() != olds.len()) {
        return None;
    }
    out.push(b'{');
    let mut first = true;
    for (i, old) in olds.iter().enumerate() {
        let updated = if same_plan {
            *old != values[i]
        } else {
            // Different present columns (MINIMAL/NOBLOB images): only columns of both count.
            let name = &before.names[i];
            names
                .iter()
                .position(|n| n == name)
                .is_some_and(|j| *old != values[j])
        };
        if updated {
            if !first {
                out.push(b',');
            }
            first = false;
            out.extend_from_slice(&before.keys[i]);
            write_opt_str(out, *old);
        }
    }
    out.push(b'}');
    Some(())
}

/// ``write_changed`` for a row of Python images.
fn write_old(
    out: &mut Vec<u8>,
    before: Option<&Image<'_>>,
    after: Option<&Bound<'_, PlanInfo>>,
    names: &[String],
    values: &[Option<&str>],
) -> PyResult<Option<()>> {
    let Some((before, plan)) = before.and_then(|b| b.plan.as_ref().map(|plan| (b, plan))) else {
        out.extend_from_slice(b"{}");
        return Ok(Some(()));
    };
    let (Some(info), Some(olds)) = (plan_info(plan)?, texts(&before.values)) else {
        return Ok(None);
    };
    let same_plan = after.is_some_and(|a| a.is(&info)) || info.get().names.as_slice() == names;
    Ok(write_changed(
        out,
        info.get(),
        &strs(&olds)?,
        same_plan,
        names,
        values,
    ))
}

/// The plan the message's current rows use, and where its key columns sit in it.
struct PlanView<'py> {
    plan: Bound<'py, PyAny>,
    info: Bound<'py, PlanInfo>,
    key_positions: Vec<Option<usize>>,
}

/// ``mysqlType`` and ``sqlType`` of a message. Nearly every message has rows of one plan:
/// both maps are then that plan's names with its MySQL types and the last row's sql types,
/// written straight from it. Rows of several plans build the maps as the Python path does.
pub(crate) enum TypeMaps<'py> {
    Empty,
    One {
        info: Bound<'py, PlanInfo>,
        sql_types: Option<Bound<'py, PyTuple>>,
    },
    Mixed {
        mysql_types: Vec<(String, String)>,
        sql_types: Vec<(String, i64)>,
        last_types: Option<Bound<'py, PyTuple>>,
    },
}

pub(crate) struct Message<'py> {
    data: Vec<u8>,
    data_rows: usize,
    old: Vec<u8>,
    old_rows: usize,
    pub(crate) types: TypeMaps<'py>,
    pk_names: Vec<String>,
    first_key: Option<Vec<Option<String>>>,
    mixed_keys: bool,
}

fn upsert_sql_types(
    map: &mut Vec<(String, i64)>,
    names: &[String],
    types: &Bound<'_, PyTuple>,
) -> PyResult<()> {
    for (name, sql_type) in names.iter().zip(types.iter()) {
        upsert(map, name, sql_type.extract::<i64>()?);
    }
    Ok(())
}

impl<'py> TypeMaps<'py> {
    /// A row of ``info``'s plan with these sql types; ``switched``: its plan differs from
    /// the previous row's.
    fn note(
        &mut self,
        info: &Bound<'py, PlanInfo>,
        types: &Bound<'py, PyTuple>,
        switched: bool,
    ) -> PyResult<()> {
        if let TypeMaps::One {
            info: first,
            sql_types,
        } = self
        {
            if switched && !first.is(info) {
                let first = first.get();
                let mut mysql_types = Vec::new();
                for (name, mysql_type) in first.names.iter().zip(&first.mysql_types) {
                    upsert(&mut mysql_types, name, mysql_type.clone());
                }
                let mut sql_map = Vec::new();
                if let Some(last) = sql_types.as_ref().filter(|t| !t.is_empty()) {
                    upsert_sql_types(&mut sql_map, &first.names, last)?;
                }
                *self = TypeMaps::Mixed {
                    mysql_types,
                    sql_types: sql_map,
                    last_types: None,
                };
            }
        }
        match self {
            TypeMaps::Empty => {
                *self = TypeMaps::One {
                    info: info.clone(),
                    sql_types: Some(types.clone()),
                };
            }
            TypeMaps::One { sql_types, .. } => *sql_types = Some(types.clone()),
            TypeMaps::Mixed {
                mysql_types,
                sql_types,
                last_types,
            } => {
                let names = &info.get().names;
                if switched {
                    for (name, mysql_type) in names.iter().zip(&info.get().mysql_types) {
                        upsert(mysql_types, name, mysql_type.clone());
                    }
                    *last_types = None;
                }
                let changed = match last_types.as_ref() {
                    Some(last) => !(last.is(types) || last.eq(types)?),
                    None => !types.is_empty(),
                };
                if changed {
                    upsert_sql_types(sql_types, names, types)?;
                    *last_types = Some(types.clone());
                }
            }
        }
        Ok(())
    }

    /// Whether both are one plan's maps with equal sql types (so they write the same JSON).
    fn same_as(&self, other: &TypeMaps<'py>) -> PyResult<bool> {
        let (
            TypeMaps::One {
                info,
                sql_types: mine,
            },
            TypeMaps::One {
                info: theirs,
                sql_types: their_types,
            },
        ) = (self, other)
        else {
            return Ok(false);
        };
        if !info.is(theirs) {
            return Ok(false);
        }
        Ok(match (mine, their_types) {
            (Some(a), Some(b)) => a.is(b) || a.eq(b)?,
            (None, None) => true,
            _ => false,
        })
    }

    fn write_mysql_types(&self, out: &mut Vec<u8>) {
        match self {
            TypeMaps::One { info, .. } if !info.get().names.is_empty() => {
                out.extend_from_slice(&info.get().mysql_types_json);
            }
            TypeMaps::Mixed { mysql_types, .. } => {
                write_map(out, mysql_types, |out, v| write_str(out, v));
            }
            _ => out.extend_from_slice(b"null"),
        }
    }

    fn write_sql_types(&self, out: &mut Vec<u8>) -> PyResult<()> {
        match self {
            TypeMaps::One {
                info,
                sql_types: Some(types),
            } if !types.is_empty() => {
                // Item by item: extracting a Vec goes through the sequence protocol.
                let types = types.iter().map(|t| t.extract::<i64>());
                let types: Vec<i64> = types.collect::<PyResult<_>>()?;
                write_pairs(out, &info.get().keys, types, write_int);
            }
            TypeMaps::Mixed { sql_types, .. } => {
                write_map(out, sql_types, |out, v| write_int(out, *v));
            }
            _ => out.extend_from_slice(b"null"),
        }
        Ok(())
    }
}

impl<'py> Message<'py> {
    /// An empty message whose key columns are ``pk_names`` (its first row's plan's).
    pub(crate) fn new(pk_names: Vec<String>) -> Self {
        Message {
            data: Vec::with_capacity(256),
            data_rows: 0,
            old: Vec::new(),
            old_rows: 0,
            types: TypeMaps::Empty,
            pk_names,
            first_key: None,
            mixed_keys: false,
        }
    }

    /// One row of ``data``; ``key_positions``: where the key columns are among ``values``.
    pub(crate) fn add_data_row(
        &mut self,
        plan: &PlanInfo,
        values: &[Option<&str>],
        key_positions: &[Option<usize>],
    ) {
        if self.data_rows > 0 {
            self.data.push(b',');
        }
        write_object(&mut self.data, &plan.keys, values);
        self.data_rows += 1;
        self.note_key(key_positions, values);
    }

    /// Bytes of the rows written so far (``data`` and ``old``): the message is larger.
    pub(crate) fn rows_len(&self) -> usize {
        self.data.len() + self.old.len()
    }

    /// Where the next row of ``old`` is written.
    pub(crate) fn next_old(&mut self) -> &mut Vec<u8> {
        if self.old_rows > 0 {
            self.old.push(b',');
        }
        self.old_rows += 1;
        &mut self.old
    }

    /// Tracks whether all data rows share one primary-key value (``message_key``).
    fn note_key(&mut self, positions: &[Option<usize>], values: &[Option<&str>]) {
        if self.pk_names.is_empty() || self.mixed_keys {
            return;
        }
        let key = positions.iter().map(|p| p.and_then(|i| values[i]));
        match &self.first_key {
            None => self.first_key = Some(key.map(|v| v.map(str::to_owned)).collect()),
            Some(first) => {
                if first.iter().map(Option::as_deref).ne(key) {
                    self.mixed_keys = true;
                }
            }
        }
    }
}

fn collect<'py>(rows: &Bound<'py, PyAny>, kind: u8) -> PyResult<Option<Message<'py>>> {
    let mut message = Message::new(Vec::new());
    let mut view: Option<PlanView<'py>> = None;
    for (index, row) in rows.try_iter()?.enumerate() {
        let row = row?;
        let Some(current) = image(&row, kind == DELETE)? else {
            return Ok(None);
        };
        let Some(texts) = texts(&current.values) else {
            return Ok(None);
        };
        let values = strs(&texts)?;
        let mut names: &[String] = &[];
        let mut current_info: Option<Bound<'py, PlanInfo>> = None;
        if let Some(plan) = &current.plan {
            let switched = !view.as_ref().is_some_and(|v| v.plan.is(plan));
            if switched {
                let Some(info) = plan_info(plan)? else {
                    return Ok(None);
                };
                if index == 0 {
                    message.pk_names.clone_from(&info.get().pk_names);
                }
                let key_positions = if message.pk_names == info.get().pk_names {
                    info.get().pk_positions.clone()
                } else {
                    let plan_names = &info.get().names;
                    message
                        .pk_names
                        .iter()
                        .map(|pk| plan_names.iter().position(|n| n == pk))
                        .collect()
                };
                view = Some(PlanView {
                    plan: plan.clone(),
                    info,
                    key_positions,
                });
            }
            let current_view = view.as_ref().expect("set above");
            names = &current_view.info.get().names;
            if names.len() != values.len() || names.len() != current.types.len() {
                return Ok(None);
            }
            message
                .types
                .note(&current_view.info, &current.types, switched)?;
            if !values.is_empty() {
                let info = current_view.info.get();
                message.add_data_row(info, &values, &current_view.key_positions);
            }
            current_info = Some(current_view.info.clone());
        }
        if kind == UPDATE {
            let before = image(&row, true)?;
            let out = message.next_old();
            if write_old(out, before.as_ref(), current_info.as_ref(), names, &values)?.is_none() {
                return Ok(None);
            }
        }
    }
    Ok(Some(message))
}

fn record_key(database: &str, table: &str, message: &Message<'_>) -> Vec<u8> {
    let mut key = Vec::with_capacity(database.len() + table.len() + 24);
    key.extend_from_slice(database.as_bytes());
    if !table.is_empty() {
        key.push(b'.');
        key.extend_from_slice(table.as_bytes());
    }
    let Some(values) = message.first_key.as_ref().filter(|_| !message.mixed_keys) else {
        return key;
    };
    key.push(b':');
    match values.as_slice() {
        [Some(one)] => key.extend_from_slice(one.as_bytes()),
        _ => {
            key.push(b'[');
            for (i, value) in values.iter().enumerate() {
                if i > 0 {
                    key.push(b',');
                }
                write_opt_str(&mut key, value.as_deref());
            }
            key.push(b']');
        }
    }
    key
}

/// A JSON array of already written row objects, or null when there are none.
fn write_rows(out: &mut Vec<u8>, count: usize, rows: &[u8]) {
    if count == 0 {
        out.extend_from_slice(b"null");
    } else {
        out.push(b'[');
        out.extend_from_slice(rows);
        out.push(b']');
    }
}

/// A JSON object of name -> value in insertion order, or null when empty.
fn write_map<V>(out: &mut Vec<u8>, map: &[(String, V)], write_value: impl Fn(&mut Vec<u8>, &V)) {
    if map.is_empty() {
        out.extend_from_slice(b"null");
        return;
    }
    out.push(b'{');
    for (i, (name, value)) in map.iter().enumerate() {
        write_key(out, i == 0, name);
        write_value(out, value);
    }
    out.push(b'}');
}

/// A message's JSON up to its ``id`` value: ``data``, ``database``, ``es``, ``gtid``.
fn write_head(out: &mut Vec<u8>, message: &Message<'_>, database: &str, es: i64, gtid: &str) {
    out.extend_from_slice(b"{\"data\":");
    write_rows(out, message.data_rows, &message.data);
    out.extend_from_slice(b",\"database\":");
    write_str(out, database);
    out.extend_from_slice(b",\"es\":");
    write_int(out, es);
    out.extend_from_slice(b",\"gtid\":");
    write_str(out, gtid);
    out.extend_from_slice(b",\"id\":");
}

/// The FlatMessage JSON of a message, written without its ``id`` and ``ts`` values; the
/// returned offsets are where those two numbers belong (``id`` first).
fn write_message(
    message: &Message<'_>,
    database: &str,
    table: &str,
    event_type: &str,
    es: i64,
    sql: &str,
    gtid: &str,
) -> PyResult<(Vec<u8>, usize, usize)> {
    let mut out = Vec::with_capacity(message.data.len() + message.old.len() + 256);
    write_head(&mut out, message, database, es, gtid);
    let id_at = out.len();
    out.extend_from_slice(b",\"isDdl\":false,\"mysqlType\":");
    message.types.write_mysql_types(&mut out);
    out.extend_from_slice(b",\"old\":");
    write_rows(&mut out, message.old_rows, &message.old);
    out.extend_from_slice(b",\"pkNames\":");
    if message.pk_names.is_empty() {
        out.extend_from_slice(b"null");
    } else {
        out.push(b'[');
        for (i, name) in message.pk_names.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(&mut out, name);
        }
        out.push(b']');
    }
    out.extend_from_slice(b",\"sql\":");
    write_str(&mut out, sql);
    out.extend_from_slice(b",\"sqlType\":");
    message.types.write_sql_types(&mut out)?;
    out.extend_from_slice(b",\"table\":");
    write_str(&mut out, table);
    out.extend_from_slice(b",\"ts\":");
    let ts_at = out.len();
    out.extend_from_slice(b",\"type\":");
    write_str(&mut out, event_type);
    out.push(b'}');
    Ok((out, id_at, ts_at))
}

/// ``(value, key)`` of the record of one rows event, or None to use the pure-Python path.
#[pyfunction]
#[pyo3(signature = (id, database, table, kind, event_type, es, ts, sql, gtid, rows))]
#[allow(clippy::too_many_arguments)]
pub fn rows_record<'py>(
    py: Python<'py>,
    id: i64,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    ts: i64,
    sql: &str,
    gtid: &str,
    rows: &Bound<'py, PyAny>,
) -> PyResult<Option<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)>> {
    let Some(message) = collect(rows, kind)? else {
        return Ok(None);
    };
    let (template, id_at, ts_at) =
        write_message(&message, database, table, event_type, es, sql, gtid)?;
    let mut out = Vec::with_capacity(template.len() + 40);
    out.extend_from_slice(&template[..id_at]);
    write_int(&mut out, id);
    out.extend_from_slice(&template[id_at..ts_at]);
    write_int(&mut out, ts);
    out.extend_from_slice(&template[ts_at..]);
    let key = record_key(database, table, &message);
    Ok(Some((PyBytes::new(py, &out), PyBytes::new(py, &key))))
}

/// What a rows event's message says besides its rows.
pub(crate) struct What<'a> {
    pub(crate) database: &'a str,
    pub(crate) table: &'a str,
    pub(crate) kind: u8,
    pub(crate) event_type: &'a str,
    pub(crate) es: i64,
    pub(crate) sql: &'a str,
    pub(crate) gtid: &'a str,
}

/// A message without its id and ts values (``write_message``: ``id_at``, ``ts_at`` are where
/// they go) and its record key.
pub(crate) struct Template {
    message: Vec<u8>,
    id_at: usize,
    ts_at: usize,
    key: Vec<u8>,
    /// Whether the message has no old values: its middle and tail are then the table's,
    /// plan's and kind's only, the same for every such event (``record_parts``).
    without_old: bool,
}

/// The ``Template`` of ``rows``; None where the pure-Python path must decide, or where it
/// comes to more than ``limit`` bytes.
fn limited_record(
    rows: &Bound<'_, PyAny>,
    what: &What<'_>,
    limit: usize,
) -> PyResult<Option<Template>> {
    let Some(message) = collect(rows, what.kind)? else {
        return Ok(None);
    };
    template(&message, what, limit)
}

/// The ``Template`` of a collected message (``limited_record``).
pub(crate) fn template(
    message: &Message<'_>,
    what: &What<'_>,
    limit: usize,
) -> PyResult<Option<Template>> {
    let (written, id_at, ts_at) = write_message(
        message,
        what.database,
        what.table,
        what.event_type,
        what.es,
        what.sql,
        what.gtid,
    )?;
    let key = record_key(what.database, what.table, message);
    if written.len() + key.len() > limit {
        return Ok(None);
    }
    Ok(Some(Template {
        message: written,
        id_at,
        ts_at,
        key,
        without_old: message.old_rows == 0,
    }))
}

/// The record of one rows event as ``(rows, head, middle, tail, key)``, to be finished later
/// with ``head + id + middle + ts + tail`` (the batch id and build time are known only then);
/// None where the pure-Python path must decide, or where value and key come to more than
/// ``limit`` bytes. Same bytes as ``rows_record`` once finished.
#[pyfunction]
#[pyo3(signature = (database, table, kind, event_type, es, sql, gtid, rows, limit))]
#[allow(clippy::too_many_arguments)]
pub fn rows_record_parts<'py>(
    py: Python<'py>,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    sql: &str,
    gtid: &str,
    rows: &Bound<'py, PyTuple>,
    limit: usize,
) -> PyResult<Option<RecordParts<'py>>> {
    let what = What {
        database,
        table,
        kind,
        event_type,
        es,
        sql,
        gtid,
    };
    let Some(t) = limited_record(rows.as_any(), &what, limit)? else {
        return Ok(None);
    };
    Ok(Some(record_parts(py, rows.len(), &t)))
}

/// ``rows_record_parts``' answer for the ``Template`` of ``count`` rows. Without old values
/// the middle (type maps, key names, table) and the tail (type) are the same for every event
/// of a table's plan and kind, so the same bytes object is handed out for the same bytes
/// (``shared``); an UPDATE's middle holds its old values and is its own.
pub(crate) fn record_parts<'py>(py: Python<'py>, count: usize, t: &Template) -> RecordParts<'py> {
    let (middle, tail) = (&t.message[t.id_at..t.ts_at], &t.message[t.ts_at..]);
    let (middle, tail) = if t.without_old {
        (shared(py, middle), shared(py, tail))
    } else {
        (PyBytes::new(py, middle), shared(py, tail))
    };
    (
        count,
        PyBytes::new(py, &t.message[..t.id_at]),
        middle,
        tail,
        PyBytes::new(py, &t.key),
    )
}

/// The bytes ``shared`` keeps at most (twice: key and object); the cache starts over when
/// more would be kept. A part larger than ``SHARED_PART_BYTES`` is not kept.
const SHARED_BYTES: usize = 1 << 20;
const SHARED_PART_BYTES: usize = 16 << 10;

/// The bytes objects ``shared`` handed out, by their bytes, and the bytes they hold.
type SharedParts = (HashMap<Vec<u8>, Py<PyBytes>>, usize);

thread_local! {
    static SHARED: RefCell<SharedParts> = RefCell::new((HashMap::new(), 0));
}

/// One bytes object for equal bytes: the records of a table's events repeat their middle
/// and tail, and a repeated object crosses to the instance's process once per batch (marshal
/// writes a reference after the first) and is held there once.
fn shared<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyBytes> {
    if bytes.len() > SHARED_PART_BYTES {
        return PyBytes::new(py, bytes);
    }
    SHARED.with_borrow_mut(|(cache, held)| {
        if let Some(found) = cache.get(bytes) {
            return found.bind(py).clone();
        }
        if *held + bytes.len() > SHARED_BYTES {
            cache.clear();
            *held = 0;
        }
        let made = PyBytes::new(py, bytes);
        cache.insert(bytes.to_vec(), made.clone().unbind());
        *held += bytes.len();
        made
    })
}

/// Each row of a rows event as a record of its own (a snapshot chunk's rows: one message
/// per row, keyed by its primary key), as ``(heads, middle, tail, keys)``: row ``i``'s value
/// is ``heads[i] + id + middle + ts + tail``. The rows share one plan, so everything after
/// ``data``, ``database``, ``es`` and ``gtid`` is the same for all; None where the
/// pure-Python path must decide (as ``rows_record_parts`` for any one row), where two rows'
/// records differ after the head, or where a value and key come to more than ``limit``.
#[pyfunction]
#[pyo3(signature = (database, table, kind, event_type, es, sql, gtid, rows, limit))]
#[allow(clippy::too_many_arguments)]
pub fn row_records_parts<'py>(
    py: Python<'py>,
    database: &str,
    table: &str,
    kind: u8,
    event_type: &str,
    es: i64,
    sql: &str,
    gtid: &str,
    rows: &Bound<'py, PyTuple>,
    limit: usize,
) -> PyResult<Option<ApartParts<'py>>> {
    let what = What {
        database,
        table,
        kind,
        event_type,
        es,
        sql,
        gtid,
    };
    let mut heads = Vec::with_capacity(rows.len());
    let mut keys = Vec::with_capacity(rows.len());
    // The first row's type maps, middle and tail: a row of the same plan and sql types
    // (and no old image) has the same middle and tail, so only its head is written.
    let mut shared: Option<(TypeMaps<'py>, Vec<u8>, Vec<u8>)> = None;
    for row in rows.iter() {
        let one = PyTuple::new(py, [row])?;
        let Some(message) = collect(one.as_any(), kind)? else {
            return Ok(None);
        };
        if let Some((types, middle, tail)) = &shared {
            if kind != UPDATE && message.types.same_as(types)? {
                let key = record_key(database, table, &message);
                let mut head = Vec::with_capacity(message.data.len() + 64);
                write_head(&mut head, &message, database, es, gtid);
                if head.len() + middle.len() + tail.len() + key.len() > limit {
                    return Ok(None);
                }
                heads.push(PyBytes::new(py, &head));
                keys.push(PyBytes::new(py, &key));
                continue;
            }
        }
        let Some(t) = template(&message, &what, limit)? else {
            return Ok(None);
        };
        let (middle, tail) = (&t.message[t.id_at..t.ts_at], &t.message[t.ts_at..]);
        match &shared {
            None => shared = Some((message.types, middle.to_vec(), tail.to_vec())),
            Some((_, m, rest)) if m.as_slice() == middle && rest.as_slice() == tail => {}
            Some(_) => return Ok(None),
        }
        heads.push(PyBytes::new(py, &t.message[..t.id_at]));
        keys.push(PyBytes::new(py, &t.key));
    }
    let Some((_, middle, tail)) = shared else {
        return Ok(None);
    };
    Ok(Some((
        PyList::new(py, heads)?,
        PyBytes::new(py, &middle),
        PyBytes::new(py, &tail),
        PyList::new(py, keys)?,
    )))
}

type ApartParts<'py> = (
    Bound<'py, PyList>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyList>,
);

pub(crate) type RecordParts<'py> = (
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
);
