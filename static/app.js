// hds dashboard: progressive enhancement only. Every page works without this
// file; with it the header's bell, the inbox and an Action's control and
// context requests update themselves (sharing one change stream), j/k move
// through the list (x picks a row for a batch decision), times stay fresh, an
// Action is decided with its keys (1-9, a/r, c, ?), and destructive choices are
// confirmed in a dialog instead of a second page.
"use strict";

(function () {
  // ---- relative times ("3 min ago"), the same words as the server's ----
  function ago(iso) {
    var t = Date.parse(iso);
    if (isNaN(t)) return null;
    var secs = Math.round((Date.now() - t) / 1000);
    var n = Math.abs(secs);
    var span;
    if (n < 45) return "just now";
    if (n < 5400) span = Math.round(n / 60) + " min";
    else if (n < 129600) span = Math.round(n / 3600) + " h";
    else {
      var d = Math.round(n / 86400);
      span = d === 1 ? "1 day" : d + " days";
    }
    return secs < 0 ? "in " + span : span + " ago";
  }

  function refreshTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var text = ago(el.getAttribute("datetime"));
      if (text && el.textContent !== text) el.textContent = text;
    });
  }

  // ---- swapping a live part in without disturbing the reader ----
  // What a fragment shows, without what changes by itself (relative times,
  // the change counter, the "new" highlight): a refresh that brings nothing
  // new is not swapped in, so focus and screen readers are left alone.
  function shown(el) {
    if (!el) return "";
    var copy = el.cloneNode(true);
    copy.removeAttribute("data-version");
    copy.querySelectorAll("[data-version]").forEach(function (e) { e.removeAttribute("data-version"); });
    copy.querySelectorAll("time").forEach(function (t) { t.textContent = ""; });
    copy.querySelectorAll(".is-new").forEach(function (e) {
      e.classList.remove("is-new");
      if (!e.classList.length) e.removeAttribute("class");
    });
    return copy.outerHTML;
  }

  // Where focus is inside `root`, told so that the same control can be found
  // in a fresh copy: by id, else by link target, else by name and value.
  function focusIn(root) {
    var el = document.activeElement;
    if (!el || el === document.body || !root.contains(el)) return null;
    return {
      id: el.id,
      tag: el.tagName,
      href: el.getAttribute("href"),
      name: el.getAttribute("name"),
      value: el.getAttribute("value"),
    };
  }

  function refocus(root, was) {
    if (!was) return;
    var found = null;
    if (was.id) found = document.getElementById(was.id);
    if (!found && was.href) found = root.querySelector(was.tag + '[href="' + CSS.escape(was.href) + '"]');
    if (!found && was.name) {
      found = root.querySelector(was.tag + '[name="' + CSS.escape(was.name) + '"]' +
        (was.value ? '[value="' + CSS.escape(was.value) + '"]' : ""));
    }
    if (found && root.contains(found)) found.focus({ preventScroll: true });
  }

  // Puts `fresh` in place of `live`'s content unless it shows the same;
  // keeps focus on the same control. Answers whether it swapped.
  function swapIn(live, fresh) {
    // A fold the reader opened stays open in the fresh copy.
    live.querySelectorAll("details[id][open]").forEach(function (d) {
      var twin = fresh.querySelector("#" + CSS.escape(d.id));
      if (twin) twin.setAttribute("open", "");
    });
    if (shown(live.firstElementChild) === shown(fresh)) return false;
    var was = focusIn(live);
    live.replaceChildren(document.adoptNode(fresh));
    refreshTimes(live);
    refocus(live, was);
    return true;
  }

  // Tells a screen reader, once, in a status region outside the swapped part.
  function say(id, text) {
    var region = document.getElementById(id);
    if (region && text && region.textContent !== text) region.textContent = text;
  }

  // ---- the change stream: one EventSource per page, shared ----
  // The server says "something changed" (GET /app/events); every live part
  // of the page subscribes here and fetches its own fresh state. Also every
  // 15 s (proxies that buffer event streams) and when the tab comes back.
  // It starts from the oldest `data-version` on the page, so a change
  // committed after any part was rendered is reported at once.
  var changes = (function () {
    var listeners = [];
    var started = false;

    function notify() {
      listeners.forEach(function (fn) { fn(); });
    }

    function start() {
      if (started) return;
      started = true;
      if (window.EventSource) {
        var since = null;
        document.querySelectorAll("[data-version]").forEach(function (el) {
          var v = parseInt(el.getAttribute("data-version"), 10);
          if (!isNaN(v) && (since === null || v < since)) since = v;
        });
        var url = "/app/events" + (since === null ? "" : "?since=" + since);
        new EventSource(url).addEventListener("changed", notify);
      }
      setInterval(notify, 15000);
      document.addEventListener("visibilitychange", function () {
        if (document.visibilityState === "visible") notify();
      });
    }

    return {
      subscribe: function (fn) {
        listeners.push(fn);
        start();
      },
    };
  })();

  // ---- live regions: re-fetched when the server says something changed ----
  // `fetchUrl` answers `accept`; `swap` puts the text in place. One fetch at
  // a time (a change during one asks for another).
  function liveRegion(fetchUrl, what, swap, accept) {
    var busy = false;
    var again = false;

    function refresh() {
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      fetch(fetchUrl, { credentials: "same-origin", headers: { Accept: accept || "text/html" } })
        .then(function (r) {
          // A redirect to the sign-in page means the session ended.
          if (!r.ok || r.url.indexOf("/app/signin") !== -1) throw new Error(what + " " + r.status);
          return r.text();
        })
        .then(swap)
        .catch(function () {})
        .then(function () {
          busy = false;
          if (again) {
            again = false;
            setTimeout(refresh, 300);
          }
        });
    }

    changes.subscribe(refresh);
    return refresh;
  }

  // ---- header: the bell's unread count ----
  function liveBell() {
    var bell = document.getElementById("nav-bell");
    if (!bell) return;
    var badge = document.getElementById("nav-bell-count");
    var label = document.getElementById("nav-bell-label");
    liveRegion("/v1/notifications/summary", "bell", function (text) {
      var n = JSON.parse(text).unread;
      if (typeof n !== "number") return;
      var shown = n > 99 ? "99+" : String(n);
      var words = n === 0 ? "No unread notifications"
        : n === 1 ? "1 unread notification" : n + " unread notifications";
      document.querySelectorAll("[data-bell-count]").forEach(function (el) {
        if (el.textContent !== shown) el.textContent = shown;
      });
      if (badge.textContent !== shown) badge.textContent = shown;
      badge.hidden = n === 0;
      // Only a new number is announced (aria-live="polite").
      if (label.textContent !== words) label.textContent = words;
      bell.setAttribute("data-unread", String(n));
    }, "application/json");
  }

  // ---- inbox: live list ----
  function liveInbox() {
    var live = document.getElementById("inbox-live");
    if (!live) return;
    var announce = document.getElementById("inbox-announce");

    function ids(root) {
      var out = {};
      root.querySelectorAll("li[data-id]").forEach(function (li) {
        out[li.getAttribute("data-id")] = true;
      });
      return out;
    }

    function swap(html) {
      // Rows picked for a batch stay as they were rendered (each carries the
      // version it was shown with) until the batch is sent or unpicked.
      if (picked().length) {
        held = true;
        return;
      }
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.querySelector(".inbox-list");
      if (!fresh) return;
      if (shown(live.firstElementChild) === shown(fresh)) return;
      var was = focusIn(live);
      var before = ids(live);
      var focused = document.activeElement && document.activeElement.closest
        ? document.activeElement.closest("li[data-id]")
        : null;
      var focusedId = focused ? focused.getAttribute("data-id") : null;
      var added = 0;
      fresh.querySelectorAll("li[data-id]").forEach(function (li) {
        if (!before[li.getAttribute("data-id")]) {
          li.classList.add("is-new");
          added++;
        }
      });
      live.replaceChildren(document.adoptNode(fresh));
      var count = document.getElementById("nav-open-count");
      if (count) count.textContent = fresh.getAttribute("data-open-count");
      refocus(live, was);
      if (focusedId && !live.contains(document.activeElement)) {
        // The focused control is gone: its row's link, if the row is there.
        var target = live.querySelector('li[data-id="' + CSS.escape(focusedId) + '"] .row-link');
        if (target) target.focus({ preventScroll: true });
      }
      if (added && announce) {
        announce.textContent = added === 1 ? "1 new request" : added + " new requests";
      }
      batchBar();
    }

    var held = false;
    var refresh = liveRegion(live.getAttribute("data-rows-url"), "inbox", swap);

    // ---- inbox: the batch bar offers the options every picked row shares ----
    var form = document.getElementById("batch-form");
    var count = document.getElementById("batch-count");
    var options = document.getElementById("batch-options");
    var note = document.getElementById("batch-note");

    function picked() {
      return Array.prototype.slice.call(document.querySelectorAll('input[name="pick"]:checked'));
    }

    function batchBar() {
      if (!form) return;
      var boxes = document.querySelectorAll('input[name="pick"]');
      var chosen = picked();
      form.hidden = boxes.length === 0;
      // While rows are picked the bar stays in view at the bottom of the
      // screen, wherever the list is scrolled to.
      form.classList.toggle("floating", chosen.length > 0);
      document.body.classList.toggle("has-floating-bar", chosen.length > 0);
      options.replaceChildren();
      note.textContent = "";
      var counted = !chosen.length ? "Pick requests with the same options to decide them together."
        : chosen.length === 1 ? "1 request picked:" : chosen.length + " requests picked:";
      if (count.textContent !== counted) count.textContent = counted;
      if (!chosen.length) return;
      // The same options are the same ids and labels; a style may differ
      // (one Source marks Reject destructive, another does not), and then
      // the button takes the strongest: destructive, then primary.
      var sets = chosen.map(function (box) { return JSON.parse(box.getAttribute("data-options")); });
      var names = function (set) { return JSON.stringify(set.map(function (o) { return [o.id, o.label]; })); };
      var shape = names(sets[0]);
      var same = sets.every(function (set) { return names(set) === shape; });
      if (!same) {
        note.textContent = "The picked requests have different options: pick requests with the same options.";
        return;
      }
      var rank = function (c) { return c.indexOf("btn-danger") >= 0 ? 2 : c.indexOf("btn-primary") >= 0 ? 1 : 0; };
      sets[0].map(function (o, i) {
        var strongest = sets.reduce(function (c, set) { return rank(set[i]["class"]) > rank(c) ? set[i]["class"] : c; }, o["class"]);
        return { id: o.id, label: o.label, "class": strongest };
      }).forEach(function (o) {
        var b = document.createElement("button");
        b.type = "submit";
        b.name = "option_id";
        b.value = o.id;
        b.className = o["class"];
        b.textContent = o.label;
        options.appendChild(b);
      });
    }

    if (form) {
      document.addEventListener("change", function (e) {
        if (!e.target.matches || !e.target.matches('input[name="pick"]')) return;
        batchBar();
        if (held && !picked().length) {
          held = false;
          refresh();
        }
      });
      batchBar();
    }
  }

  // ---- Action page: control and context requests, live ----
  function liveRequests() {
    var live = document.getElementById("requests-live");
    if (!live) return;
    function statuses(root) {
      var out = {};
      root.querySelectorAll("li[id][data-status]").forEach(function (li) {
        out[li.id] = li.getAttribute("data-status");
      });
      return out;
    }
    liveRegion(live.getAttribute("data-url"), "requests", function (html) {
      var doc = new DOMParser().parseFromString(html, "text/html");
      var fresh = doc.querySelector(".requests-fragment");
      if (!fresh) return;
      var before = statuses(live);
      var news = [];
      fresh.querySelectorAll("li[id][data-status]").forEach(function (li) {
        var now = li.getAttribute("data-status");
        if (before[li.id] !== now) {
          var what = li.querySelector(".ev-what");
          var name = what ? (what.firstChild || what).textContent.trim() : "";
          if (name.length > 80) name = name.slice(0, 79) + "…";
          news.push((name || "A request") + ": " + now);
        }
      });
      if (swapIn(live, fresh) && news.length) say("requests-status", news.join(". "));
    });
  }

  // ---- runs: the list and a run's page, live ----
  // Each swaps its fragment in when something changed (a Source reported
  // progress): the page's own URL for the list, `data-url` for a run.
  function liveRuns() {
    [["run-live", ".run-fragment"], ["runs-live", ".runs-fragment"]].forEach(function (pair) {
      var live = document.getElementById(pair[0]);
      if (!live) return;
      var url = live.getAttribute("data-url") || window.location.pathname + window.location.search;
      liveRegion(url, pair[0], function (html) {
        var doc = new DOMParser().parseFromString(html, "text/html");
        var fresh = doc.querySelector(pair[1]);
        if (!fresh) return;
        var status = document.getElementById("run-status");
        var before = status ? status.textContent : null;
        if (!swapIn(live, fresh)) return;
        // A run that finished meanwhile can no longer be cancelled: its
        // form (outside the swapped part, so typing survives) goes.
        var cancel = document.getElementById("run-cancel");
        if (cancel && fresh.getAttribute("data-cancellable") === "false") {
          cancel.closest("section").remove();
        }
        // The run page says a new status once, outside the swapped part.
        var after = document.getElementById("run-status");
        if (after && before !== null && after.textContent !== before) {
          var counts = document.getElementById("run-counts");
          say("run-announce", "Run " + after.textContent + (counts ? ": " + counts.textContent : ""));
        }
      });
    });
  }

  // ---- single-key shortcuts: on unless the person turned them off ----
  // (WCAG 2.1.4: a speech-input user's words must not press keys.) Every
  // `button[data-keys-toggle]` shows the state and flips it, remembered in
  // this browser.
  // What takes the keyboard's focus on purpose (not `main`, which takes it
  // from the skip link or a click on text).
  var CONTROL = 'a[href], button, summary, [tabindex]:not([tabindex="-1"])';

  // The control that has the focus on purpose, or null: nothing in
  // particular (the body, `main`, or a control left focused in a dialog that
  // has just closed, before the browser moved the focus back).
  function focusedControl() {
    var active = document.activeElement;
    if (!active || active === document.body || !active.matches(CONTROL)) return null;
    if (active.closest("dialog:not([open])")) return null;
    return active;
  }

  // Where the browser keeps no storage, the choice holds for this page.
  var keysChoice = null;
  function keysOn() {
    if (keysChoice !== null) return keysChoice;
    try {
      return window.localStorage.getItem("hds-keys") !== "off";
    } catch (err) {
      return true;
    }
  }

  function keysToggles() {
    var buttons = document.querySelectorAll("button[data-keys-toggle]");
    function label() {
      var on = keysOn();
      buttons.forEach(function (b) {
        b.textContent = on ? "Turn single-key shortcuts off" : "Turn single-key shortcuts on";
      });
      document.querySelectorAll("[data-keys-hint]").forEach(function (el) {
        el.classList.toggle("keys-off", !on);
      });
      // The letters on the buttons, and what they tell assistive
      // technology, go with the keys.
      document.querySelectorAll(".key-hint").forEach(function (el) {
        el.hidden = !on;
      });
      document.querySelectorAll("[data-key]").forEach(function (el) {
        if (on) el.setAttribute("aria-keyshortcuts", el.getAttribute("data-key"));
        else el.removeAttribute("aria-keyshortcuts");
      });
    }
    buttons.forEach(function (b) {
      b.hidden = false;
      b.addEventListener("click", function () {
        var next = !keysOn();
        keysChoice = next;
        try {
          window.localStorage.setItem("hds-keys", next ? "on" : "off");
          keysChoice = null;
        } catch (err) {
          // Kept in memory for this page.
        }
        label();
      });
    });
    label();
  }

  // ---- inbox: j / k / Enter ----
  function keyboard() {
    if (!document.getElementById("inbox-live")) return;
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || !keysOn()) return;
      var t = e.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      // Only with nothing in particular focused, or a row: pressed on a tab,
      // a filter button or the toggle, a key means nothing.
      var active = focusedControl();
      if (active && !active.matches(".row-link")) return;
      if (e.key === "x") {
        var row = document.activeElement && document.activeElement.closest
          ? document.activeElement.closest("li[data-id]") : null;
        var box = row ? row.querySelector('input[name="pick"]') : null;
        if (box) {
          box.click();
          e.preventDefault();
        }
        return;
      }
      if (e.key !== "j" && e.key !== "k") return;
      var links = Array.prototype.slice.call(document.querySelectorAll("#inbox-live .row-link"));
      if (!links.length) return;
      var i = links.indexOf(document.activeElement);
      var next = e.key === "j" ? (i < 0 ? 0 : Math.min(i + 1, links.length - 1)) : (i < 0 ? 0 : Math.max(i - 1, 0));
      links[next].focus();
      links[next].scrollIntoView({ block: "nearest" });
      e.preventDefault();
      // Enter on a focused link opens it: the browser does that already.
    });
  }

  // ---- Action page: confirm destructive choices in a dialog ----
  function confirmDestructive() {
    var dialog = document.getElementById("confirm-dialog");
    if (!dialog || typeof dialog.showModal !== "function") return;
    var title = document.getElementById("confirm-dialog-title");
    var text = document.getElementById("confirm-dialog-text");
    var yes = document.getElementById("confirm-dialog-yes");
    var no = document.getElementById("confirm-dialog-no");
    var pending = null;

    document.addEventListener("submit", function (e) {
      var button = e.submitter;
      var form = e.target;
      if (!button || !button.hasAttribute("data-confirm")) return;
      if (form.querySelector('input[name="confirmed"]')) return;
      e.preventDefault();
      pending = { form: form, button: button };
      // A destructive option says so; a control asks as its own page does.
      var asked = button.getAttribute("data-confirm-title");
      title.textContent = asked || "This is destructive";
      title.className = asked ? "" : "danger-title";
      yes.className = asked ? "btn btn-primary" : "btn btn-danger-solid";
      text.textContent = button.getAttribute("data-confirm");
      var label = button.getAttribute("data-label") || button.textContent.trim();
      yes.textContent = label ? "Yes, " + label : "Confirm";
      dialog.showModal();
      no.focus();
    });

    yes.addEventListener("click", function () {
      if (!pending) return;
      var mark = document.createElement("input");
      mark.type = "hidden";
      mark.name = "confirmed";
      mark.value = "yes";
      pending.form.appendChild(mark);
      dialog.close();
      pending.form.requestSubmit(pending.button);
      pending = null;
    });
    no.addEventListener("click", function () {
      pending = null;
      dialog.close();
    });
    dialog.addEventListener("cancel", function () {
      pending = null;
    });
  }

  // ---- Action page: decide with the keys shown on the buttons ----
  // 1-9 (or a / r for an approve/reject pair) press that option's button,
  // so a destructive one still asks first; c goes to the comment box (the
  // reason box where comments are closed), ? lists
  // the keys. Ignored while typing and while a dialog is open.
  function decisionKeys() {
    var form = document.getElementById("decide-form");
    var help = document.getElementById("keys-help");
    if (!form && !help) return;
    var hint = document.getElementById("decide-keys");
    // Only where some button has a key (a typed answer has none).
    if (hint && form && form.querySelector("button[data-key]")) hint.hidden = false;
    document.addEventListener("keydown", function (e) {
      if (e.altKey || e.ctrlKey || e.metaKey || e.repeat || !keysOn()) return;
      var t = e.target;
      if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
      if (document.querySelector("dialog[open]")) return;
      // A key means something only while focus is on nothing in particular
      // or in the decision form: pressed on another button or link (Claim,
      // a link in the description) or on the toggle, it means nothing.
      // (`main` takes the focus from the skip link or a click on text: it is
      // nothing in particular.)
      var active = focusedControl();
      if (active && (!form || !form.contains(active) || active.hasAttribute("data-keys-toggle"))) return;
      if (e.key === "?" && help && typeof help.showModal === "function") {
        help.showModal();
        e.preventDefault();
        return;
      }
      if (e.key === "c") {
        var box = document.getElementById("comment-body") || (form && form.querySelector('textarea[name="reason"]'));
        if (box) {
          box.focus();
          box.scrollIntoView({ block: "center" });
          e.preventDefault();
        }
        return;
      }
      if (!form) return;
      var button = form.querySelector('button[data-key="' + CSS.escape(e.key) + '"]');
      if (!button) return;
      e.preventDefault();
      button.focus();
      form.requestSubmit(button);
    });
    var close = document.getElementById("keys-help-close");
    if (close && help) close.addEventListener("click", function () { help.close(); });
  }

  // ---- Copy buttons: <button data-copy="element-id"> copies that element's text ----
  function copyButtons() {
    document.querySelectorAll("button[data-copy]").forEach(function (button) {
      var target = document.getElementById(button.getAttribute("data-copy"));
      if (!target || !navigator.clipboard) return;
      button.hidden = false;
      button.addEventListener("click", function () {
        navigator.clipboard.writeText(target.textContent.trim()).then(function () {
          button.textContent = "Copied";
        }, function () {
          button.textContent = "Select and copy it by hand";
        });
      });
    });
  }

  function start() {
    liveBell();
    liveInbox();
    liveRequests();
    liveRuns();
    keysToggles();
    keyboard();
    confirmDestructive();
    decisionKeys();
    copyButtons();
    setInterval(refreshTimes, 30000);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
