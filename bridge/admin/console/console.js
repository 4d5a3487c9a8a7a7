// canal-bridge's web console: polls GET /api/v1/destinations every second and shows one row
// per destination; the actions call the REST API (docs/operations.md, "Web console").
//
// Everything shown comes from the API and is set with textContent or a property, never parsed
// as HTML: a table or an error text holding markup shows as text. Rows are kept by name and
// updated in place (a button under the pointer survives a poll); the table has one click
// listener, so rows come and go without listeners to leak.
"use strict";

(function () {
  const POLL_MS = 1000;
  const TOKEN_KEY = "canal-bridge-token";
  const API = "../api/v1";

  const $ = (id) => document.getElementById(id);
  const tbody = document.querySelector("#destinations tbody");
  const rows = new Map(); // name -> {tr, cells}
  let destinations = [];
  let sortKey = "name";
  let sortDescending = false;

  // --- the token, kept for this tab only ----------------------------------------------------

  function token() {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  }

  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const typed = $("token").value.trim();
    if (typed) sessionStorage.setItem(TOKEN_KEY, typed);
    $("token").value = "";
    say(typed ? "Token kept for this tab." : "Type the token first.");
    poll();
  });

  $("forget-token").addEventListener("click", () => {
    sessionStorage.removeItem(TOKEN_KEY);
    say("Token forgotten.");
  });

  // --- talking to the API -------------------------------------------------------------------

  async function call(method, path, body, contentType) {
    const headers = {};
    if (token()) headers.Authorization = "Bearer " + token();
    if (body !== undefined) headers["Content-Type"] = contentType || "application/json";
    const response = await fetch(API + path, { method, headers, body, cache: "no-store" });
    let document = null;
    try {
      document = await response.json();
    } catch (error) {
      document = { error: "HTTP " + response.status + " without a JSON answer" };
    }
    return { status: response.status, document };
  }

  function say(text, isError) {
    const message = $("message");
    message.textContent = text;
    message.className = isError ? "error" : "";
  }

  function refusal(answer) {
    const error = (answer.document && answer.document.error) || "HTTP " + answer.status;
    if (answer.status === 401) return "Refused: " + error + " (type the token above)";
    if (answer.status === 403) return "Refused: " + error;
    return error;
  }

  // --- polling ------------------------------------------------------------------------------

  let timer = null;

  async function poll() {
    clearTimeout(timer);
    try {
      const answer = await call("GET", "/destinations");
      if (answer.status === 200) {
        destinations = answer.document.destinations;
        render();
        updated("updated " + new Date().toLocaleTimeString(), false);
      } else {
        updated("not updated: " + refusal(answer), true);
      }
    } catch (error) {
      updated("no answer from canal-bridge: retrying", true);
    }
    timer = setTimeout(poll, POLL_MS);
  }

  function updated(text, isError) {
    const line = $("updated");
    line.textContent = text;
    line.className = isError ? "error" : "";
  }

  // --- the table ----------------------------------------------------------------------------

  const COLUMNS = ["name", "state", "role", "lag", "rate", "rows", "cursor", "snapshot", "error"];

  function newRow(name) {
    const tr = document.createElement("tr");
    const cells = {};
    for (const column of COLUMNS) {
      const td = document.createElement("td");
      td.className = column;
      cells[column] = td;
      tr.append(td);
    }
    cells.progress = document.createElement("progress");
    cells.progress.max = 100;
    cells.percent = document.createElement("span");
    cells.tables = document.createElement("div");
    cells.tables.className = "detail";
    cells.snapshot.append(cells.progress, cells.percent, cells.tables);
    const actions = document.createElement("td");
    actions.className = "actions";
    for (const action of ["pause", "resume", "snapshot", "cursor"]) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = action === "cursor" ? "Cursor…" : capitalize(action);
      button.dataset.action = action;
      button.dataset.destination = name;
      actions.append(button);
    }
    tr.append(actions);
    tr.dataset.destination = name;
    return { tr, cells };
  }

  function setText(element, text) {
    if (element.textContent !== text) element.textContent = text;
  }

  function fill(row, d) {
    const c = row.cells;
    setText(c.name, d.name);
    setText(c.state, d.state);
    c.state.title = d.reason || "";
    row.tr.className = "state-" + d.state + (d.ready ? "" : " not-ready");
    setText(c.role, d.role);
    setText(c.lag, d.lag_s === null ? "–" : d.lag_s.toFixed(1));
    setText(c.rate, d.rows_per_s === null ? "–" : String(d.rows_per_s));
    setText(c.rows, String(d.rows));
    setText(c.cursor, d.cursor || "–");
    const snapshot = d.snapshot;
    c.progress.hidden = !snapshot;
    if (snapshot) {
      const percent = snapshot.percent === null ? 0 : snapshot.percent;
      c.progress.value = percent;
      setText(c.percent, " " + percent + " %");
      setText(
        c.tables,
        snapshot.tables_done + "/" + snapshot.tables_total + " tables, " + snapshot.rows + " rows"
      );
    } else {
      setText(c.percent, "–");
      setText(c.tables, "");
    }
    setText(c.error, d.error || "");
  }

  function sortValue(d) {
    if (sortKey === "snapshot") return d.snapshot ? d.snapshot.percent : -1;
    const value = d[sortKey];
    return value === null || value === undefined ? "" : value;
  }

  function render() {
    const filter = $("filter").value.trim().toLowerCase();
    const shown = destinations.filter(
      (d) =>
        !filter ||
        [d.name, d.state, d.error || ""].some((text) => text.toLowerCase().includes(filter))
    );
    shown.sort((a, b) => {
      const x = sortValue(a);
      const y = sortValue(b);
      const order = x < y ? -1 : x > y ? 1 : 0;
      return sortDescending ? -order : order;
    });
    const wanted = new Set(destinations.map((d) => d.name));
    for (const [name, row] of rows) {
      if (!wanted.has(name)) {
        row.tr.remove();
        rows.delete(name);
      }
    }
    const ordered = shown.map((d) => {
      let row = rows.get(d.name);
      if (!row) {
        row = newRow(d.name);
        rows.set(d.name, row);
      }
      fill(row, d);
      return row.tr;
    });
    const current = Array.from(tbody.children);
    const same =
      current.length === ordered.length && current.every((tr, i) => tr === ordered[i]);
    if (!same) tbody.replaceChildren(...ordered);
    const running = destinations.filter((d) => d.state === "running").length;
    setText($("summary"), destinations.length + " destinations, " + running + " running");
  }

  $("filter").addEventListener("input", render);

  document.querySelector("#destinations thead").addEventListener("click", (event) => {
    const th = event.target.closest("th[data-sort]");
    if (!th) return;
    sortDescending = sortKey === th.dataset.sort ? !sortDescending : false;
    sortKey = th.dataset.sort;
    for (const other of document.querySelectorAll("th[data-sort]")) {
      other.classList.toggle("sorted", other === th);
      other.classList.toggle("descending", other === th && sortDescending);
    }
    render();
  });

  // --- actions, each behind a confirmation --------------------------------------------------

  tbody.addEventListener("click", async (event) => {
    const button = event.target.closest("button[data-action]");
    if (!button) return;
    const name = button.dataset.destination;
    const action = button.dataset.action;
    const path = "/destinations/" + encodeURIComponent(name) + "/";
    let answer;
    if (action === "pause" || action === "resume") {
      if (!confirm(capitalize(action) + " destination " + name + "?")) return;
      answer = await call("POST", path + action, "{}");
    } else if (action === "snapshot") {
      const typed = prompt("Snapshot which tables of " + name + "? (schema.table, comma-separated)");
      if (!typed) return;
      const tables = typed.split(",").map((t) => t.trim()).filter(Boolean);
      if (!confirm("Snapshot " + tables.join(", ") + " in " + name + "?")) return;
      answer = await call("POST", path + "snapshot", JSON.stringify({ tables }));
    } else {
      const typed = prompt(
        "Move the cursor of " + name + " (paused) to: file:position, a GTID set, or an ISO-8601 time"
      );
      if (!typed) return;
      if (!confirm("Move the cursor of " + name + " to " + typed + "?")) return;
      answer = await call("PUT", path + "cursor", JSON.stringify(cursorTarget(typed.trim())));
    }
    if (answer.status < 300) {
      const tables = answer.document.tables;
      say(capitalize(action) + " of " + name + (tables ? ": planned " + tables.join(", ") : ": done."));
    } else {
      say(capitalize(action) + " of " + name + " refused: " + refusal(answer), true);
    }
    poll();
  });

  function cursorTarget(typed) {
    if (/^\d{4}-\d{2}-\d{2}/.test(typed)) return { timestamp: typed };
    if (/^[^:\s]+\.\d+:\d+$/.test(typed)) return { position: typed }; // mysql-bin.000042:4
    return { gtid: typed };
  }

  function capitalize(word) {
    return word.charAt(0).toUpperCase() + word.slice(1);
  }

  // --- configuration ------------------------------------------------------------------------

  async function sendConfig(apply) {
    const text = $("config-text").value;
    if (apply && !confirm("Write this configuration to the file and apply it now?")) return;
    const answer = await call(
      "POST",
      "/config" + (apply ? "?apply=true" : ""),
      text,
      "application/yaml"
    );
    const result = $("config-result");
    if (answer.status === 200) {
      const done = answer.document.applied ? "Applied: " : "Valid; applying would change: ";
      result.textContent = done + answer.document.summary;
      result.className = "";
    } else {
      const problems = answer.document.problems || [];
      result.textContent = [refusal(answer)].concat(problems).join("\n");
      result.className = "error";
    }
    poll();
  }

  $("config-validate").addEventListener("click", () => sendConfig(false));
  $("config-apply").addEventListener("click", () => sendConfig(true));

  poll();
})();
