(function () {
  'use strict';
  // argus annotate serve's page: the editor, the keys, saving. view.js (loaded first) keeps showing and
  // highlighting what is clicked; this script keeps what is selected, sends each edit to the server and, once it
  // is saved, swaps in the panels of the page as the server renders it now (argus.output.annotate).
  var cfgEl = document.getElementById('annotate-data');
  var cfg = JSON.parse(cfgEl.textContent);
  var data = JSON.parse(document.getElementById('ekg-data').textContent);
  var pane = document.getElementById('text-pane');
  var editor = document.getElementById('editor-body');
  var hint = editor.firstElementChild.cloneNode(true);
  var saveState = document.getElementById('save-state');
  var messageEl = document.getElementById('message');
  var selected = null; // {kind: 'event' | 'entity' | 'sentence' | 'span', id, start, end, text, sentence}
  var busy = false;

  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function attr(name, value) { return '[' + name + '="' + CSS.escape(value) + '"]'; }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function button(label, action, title) {
    var b = el('button', null, label);
    b.type = 'button';
    b.setAttribute('data-action', action);
    if (title) b.title = title;
    return b;
  }
  function choice(id, options, value) {
    var s = el('select');
    s.id = id;
    options.forEach(function (o) {
      var opt = el('option', null, typeof o === 'string' ? o : o.label);
      opt.value = typeof o === 'string' ? o : o.value;
      if (opt.value === value) opt.selected = true;
      s.appendChild(opt);
    });
    return s;
  }
  function row() {
    var r = el('div', 'row');
    Array.prototype.slice.call(arguments).forEach(function (x) {
      r.appendChild(typeof x === 'string' ? document.createTextNode(x) : x);
    });
    return r;
  }
  function short(s, n) { s = String(s || ''); return s.length > n ? s.slice(0, n - 1) + '…' : s; }

  // ------------------------------------------------------------------ state shown to the user
  function savedText() { return cfg.saved ? 'saved · revision ' + cfg.revision : "not saved yet: the model's graph"; }
  function setState(state, text) { saveState.setAttribute('data-state', state); saveState.textContent = text; }
  function say(text, kind) {
    messageEl.hidden = !text;
    messageEl.className = text ? (kind || 'info') : '';
    messageEl.textContent = text || '';
  }
  function syncButtons() {
    document.getElementById('btn-undo').disabled = !cfg.undo;
    document.getElementById('btn-next').disabled = !cfg.next;
  }

  // ------------------------------------------------------------------ talking to the server
  function send(ops) {
    if (busy) { say('Still saving the last edit: try again in a moment.', 'warn'); return Promise.resolve(null); }
    busy = true;
    setState('saving', 'saving…');
    var headers = {'Content-Type': 'application/json'};
    headers[cfg.token_header] = cfg.token;
    return fetch(cfg.api, {method: 'POST', headers: headers, cache: 'no-store', credentials: 'same-origin',
                           body: JSON.stringify({revision: cfg.revision, ops: ops})})
      .then(function (r) {
        return r.json().catch(function () { return {error: 'HTTP ' + r.status}; })
          .then(function (body) { return {status: r.status, body: body}; });
      })
      .then(function (res) {
        if (res.status === 200) {
          return refresh().then(function () {
            busy = false;
            say('');
            setState('saved', savedText());
            return res.body;
          });
        }
        if (res.status === 409) {
          return refresh().then(function () {
            busy = false;
            setState('conflict', 'changed elsewhere · now revision ' + cfg.revision);
            say('This document was saved from another tab or window first (it is now at revision ' + cfg.revision +
                '). The page shows that saved state now; your last edit was not applied: make it again if it is ' +
                'still needed.', 'warn');
            return null;
          });
        }
        busy = false;
        setState('error', 'last edit not saved');
        say((res.body && res.body.error) || ('HTTP ' + res.status), 'error');
        return null;
      })
      .catch(function (e) {
        busy = false;
        setState('error', 'last edit not saved');
        say('Not saved: ' + e, 'error');
        return null;
      });
  }

  // the page as the server renders it now: its panels and data replace these
  function refresh() {
    return fetch(cfg.page, {cache: 'no-store', credentials: 'same-origin'})
      .then(function (r) {
        if (!r.ok) throw new Error('HTTP ' + r.status + ' reloading the document');
        return r.text();
      })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        var top = pane.scrollTop;
        pane.replaceChildren.apply(pane, Array.prototype.slice.call(doc.getElementById('text-pane').childNodes));
        pane.scrollTop = top;
        ['summary', 'events', 'timeline', 'graph', 'entities'].forEach(function (id) {
          var fresh = doc.getElementById(id), old = document.getElementById(id);
          if (!fresh || !old) return;
          var scroll = old.scrollTop;
          old.replaceWith(fresh);
          fresh.scrollTop = scroll;
        });
        document.getElementById('ekg-data').textContent = doc.getElementById('ekg-data').textContent;
        cfgEl.textContent = doc.getElementById('annotate-data').textContent;
        cfg = JSON.parse(cfgEl.textContent);
        data = JSON.parse(document.getElementById('ekg-data').textContent);
        document.dispatchEvent(new CustomEvent('argus:data'));
        syncButtons();
        restore();
      });
  }

  // ------------------------------------------------------------------ selection
  function eventsInOrder() {
    return all('#events .event-item').map(function (x) { return x.getAttribute('data-event-id'); });
  }
  function eventLabel(id) {
    var ev = data.events[id];
    return ev ? id + ' · ' + ev.type + ' · ' + short(ev.trigger, 40) : id;
  }
  function sentenceText(id) {
    return all('.sent' + attr('data-sentence-id', id), pane).map(function (x) { return x.textContent; }).join('');
  }
  function markSentence(id) {
    all('.sent.selected', pane).forEach(function (x) { x.classList.remove('selected'); });
    if (id) all('.sent' + attr('data-sentence-id', id), pane).forEach(function (x) { x.classList.add('selected'); });
  }
  function choose(sel) {
    selected = sel;
    markSentence(sel && sel.kind === 'sentence' ? sel.id : null);
    renderEditor();
  }
  function clearSelection() {
    var s = window.getSelection();
    if (s) s.removeAllRanges();
    choose(null);
  }
  // after a save: show the same thing selected again, if it is still there (the view's highlight included)
  function restore() {
    if (!selected) { renderEditor(); return; }
    var target = null;
    if (selected.kind === 'event') {
      if (!data.events[selected.id]) { choose(null); return; }
      target = document.querySelector('#events .event-item' + attr('data-event-id', selected.id));
    } else if (selected.kind === 'entity') {
      if (!data.entities[selected.id]) { choose(null); return; }
      target = document.querySelector('#entities .entity-link' + attr('data-entity-id', selected.id));
    } else if (selected.kind === 'span') {
      var s = window.getSelection();
      if (s) s.removeAllRanges();
      choose(null);
      return;
    }
    if (target) target.click(); else choose(selected);
  }

  // ------------------------------------------------------------------ the editor
  function renderEditor() {
    editor.replaceChildren();
    if (!selected) { editor.appendChild(hint.cloneNode(true)); return; }
    if (selected.kind === 'event' && data.events[selected.id]) eventEditor(data.events[selected.id]);
    else if (selected.kind === 'entity' && data.entities[selected.id]) entityEditor(data.entities[selected.id]);
    else if (selected.kind === 'sentence' && data.sentences[selected.id]) sentenceEditor(selected.id);
    else if (selected.kind === 'span') spanEditor(selected);
    else editor.appendChild(hint.cloneNode(true));
  }
  function edgeItem(kind, source, target, relation) {
    var li = el('li');
    li.setAttribute('data-kind', kind);
    li.setAttribute('data-source', source);
    li.setAttribute('data-target', target);
    li.setAttribute('data-relation', relation);
    li.appendChild(document.createTextNode(source + ' ' + relation + ' ' + target + ' (' + kind + ') '));
    li.appendChild(button('Reverse', 'reverse-edge', 'Swap its two ends'));
    li.appendChild(document.createTextNode(' '));
    li.appendChild(button('Delete', 'delete-edge'));
    return li;
  }
  function eventEditor(ev) {
    var h = el('h3', null, ev.id + ' · ' + ev.type + ' · “' + short(ev.trigger, 60) + '”');
    h.setAttribute('data-editor-event', ev.id);
    editor.appendChild(h);
    editor.appendChild(row('Type ', choice('edit-type', cfg.types, ev.type), ' ', button('Delete event', 'delete-event', 'Delete (Del)')));
    editor.appendChild(el('div', 'keys', cfg.shortcut_types.map(function (t, i) { return (i + 1) + ' ' + t; }).join(' · ')));
    var others = eventsInOrder().filter(function (x) { return x !== ev.id; })
      .map(function (x) { return {value: x, label: eventLabel(x)}; });
    if (others.length) {
      editor.appendChild(row('Merge ', choice('merge-other', others, null), ' into ' + ev.id + ' ',
                             button('Merge', 'merge', 'The other event goes; its evidence, participants and edges join this one')));
      var rels = cfg.relations.temporal.map(function (r) { return {value: r, label: r + ' (temporal)'}; })
        .concat(cfg.relations.causal.map(function (r) { return {value: r, label: r + ' (causal)'}; }));
      editor.appendChild(row('Edge: ' + ev.id + ' ', choice('edge-relation', rels, 'BEFORE'), ' ',
                             choice('edge-target', others, null), ' ', button('Add edge', 'add-edge')));
    }
    var ul = el('ul', 'edges');
    ev.temporal_out.forEach(function (e) { ul.appendChild(edgeItem('temporal', ev.id, e.target, e.relation)); });
    ev.temporal_in.forEach(function (e) { ul.appendChild(edgeItem('temporal', e.source, ev.id, e.relation)); });
    ev.causes_out.forEach(function (e) { ul.appendChild(edgeItem('causal', ev.id, e.target, e.relation)); });
    ev.causes_in.forEach(function (e) { ul.appendChild(edgeItem('causal', e.source, ev.id, e.relation)); });
    editor.appendChild(el('div', 'muted', ul.children.length ? 'Edges' : 'No edges'));
    editor.appendChild(ul);
  }
  function entityEditor(en) {
    var h = el('h3', null, en.id + ' · ' + en.name);
    h.setAttribute('data-editor-entity', en.id);
    editor.appendChild(h);
    var name = el('input');
    name.type = 'text'; name.id = 'entity-name'; name.value = en.name;
    editor.appendChild(row('Name ', name));
    editor.appendChild(row('Role ', choice('entity-role', cfg.roles, en.role), ' Kind ', choice('entity-kind', cfg.kinds, en.kind)));
    var aliases = el('input');
    aliases.type = 'text'; aliases.id = 'entity-aliases'; aliases.value = en.aliases.join('; ');
    aliases.title = 'Separated by semicolons';
    editor.appendChild(row('Aliases ', aliases));
    editor.appendChild(row(button('Save entity', 'save-entity'), el('span', 'muted small', ' aliases separated by “;”')));
  }
  function sentenceEditor(id) {
    var s = data.sentences[id];
    var h = el('h3', null, id + ' · ' + s.section + ' · ' + (s.fact ? 'fact' : 'not a fact'));
    h.setAttribute('data-editor-sentence', id);
    editor.appendChild(h);
    editor.appendChild(el('div', 'quote', short(sentenceText(id), 400)));
    editor.appendChild(row(button(s.fact ? 'Flip to “not a fact”' : 'Flip to “fact”', 'flip-fact', 'Flip the fact label (F)')));
  }
  function spanEditor(sel) {
    var h = el('h3', null, 'New event from the selection');
    h.setAttribute('data-editor-span', sel.start + '-' + sel.end);
    editor.appendChild(h);
    editor.appendChild(el('div', 'quote', '“' + short(sel.text, 200) + '”'));
    if (!sel.sentence) {
      editor.appendChild(el('p', 'badge warn', 'Select words of one sentence.'));
      return;
    }
    var facts = cfg.facts.indexOf(sel.sentence) >= 0;
    editor.appendChild(el('div', 'muted', 'in ' + sel.sentence + (facts ? ', which becomes its evidence' :
      ': outside the facts sections, where no event is annotated')));
    editor.appendChild(row('Type ', choice('new-type', cfg.types, 'other'), ' ', button('Add event', 'add-event', 'Add (E)')));
  }

  // ------------------------------------------------------------------ edits
  function setType(type) {
    if (!selected || selected.kind !== 'event') return;
    send([{op: 'set_type', event: selected.id, type: type}]);
  }
  function deleteEvent() {
    if (!selected || selected.kind !== 'event') return;
    send([{op: 'delete_event', event: selected.id}]);
  }
  function addEvent() {
    if (!selected || selected.kind !== 'span') return;
    var typeEl = document.getElementById('new-type');
    send([{op: 'add_event', start: selected.start, end: selected.end, type: typeEl ? typeEl.value : 'other'}])
      .then(function (res) {
        if (res && res.created && res.created.length) { selected = {kind: 'event', id: res.created[0]}; restore(); }
      });
  }
  function flipFact() {
    var id = selected && (selected.kind === 'sentence' ? selected.id : selected.sentence);
    if (!id || !data.sentences[id]) return;
    send([{op: 'set_fact', sentence: id, fact: !data.sentences[id].fact}]);
  }
  function accept() {
    send([{op: 'accept'}]).then(function (res) {
      if (res) say('Accepted: saved as gold (revision ' + res.revision + ').', 'info');
    });
  }
  function undo() {
    if (!cfg.undo) { say('Nothing to undo.', 'info'); return; }
    send([{op: 'undo'}]);
  }
  function next() {
    if (!cfg.next) { say('This is the last document.', 'info'); return; }
    location.href = '/doc/' + encodeURIComponent(cfg.next);
  }
  function act(action, b) {
    var value = function (id) { var x = document.getElementById(id); return x ? x.value : null; };
    if (action === 'delete-event') deleteEvent();
    else if (action === 'merge') send([{op: 'merge_events', keep: selected.id, absorb: value('merge-other')}]);
    else if (action === 'add-edge') {
      var rel = value('edge-relation');
      send([{op: 'add_edge', kind: cfg.relations.temporal.indexOf(rel) >= 0 ? 'temporal' : 'causal',
             source: selected.id, target: value('edge-target'), relation: rel}]);
    } else if (action === 'reverse-edge' || action === 'delete-edge') {
      var li = b.closest('li');
      send([{op: action === 'reverse-edge' ? 'reverse_edge' : 'delete_edge', kind: li.getAttribute('data-kind'),
             source: li.getAttribute('data-source'), target: li.getAttribute('data-target'),
             relation: li.getAttribute('data-relation')}]);
    } else if (action === 'save-entity') {
      var en = data.entities[selected.id];
      var op = {op: 'set_entity', entity: selected.id};
      var aliases = value('entity-aliases').split(';').map(function (a) { return a.trim(); }).filter(Boolean);
      if (value('entity-name') !== en.name) op.name = value('entity-name');
      if (value('entity-role') !== en.role) op.role = value('entity-role');
      if (value('entity-kind') !== en.kind) op.kind = value('entity-kind');
      if (aliases.join('\u0000') !== en.aliases.join('\u0000')) op.aliases = aliases;
      if (Object.keys(op).length === 2) { say('Nothing changed.', 'info'); return; }
      send([op]);
    } else if (action === 'flip-fact') flipFact();
    else if (action === 'add-event') addEvent();
  }

  // ------------------------------------------------------------------ events of the page
  function offset(node, off) {
    var r = document.createRange();
    r.setStart(pane, 0);
    r.setEnd(node, off);
    return r.toString().length; // the pane's text is the filing's text: offsets are the spans' characters
  }
  function sentenceAt(node) {
    var e = node.nodeType === 1 ? node : node.parentElement;
    var s = e && e.closest('.sent');
    return s && pane.contains(s) ? s.getAttribute('data-sentence-id') : null;
  }
  function checkSpan() {
    var sel = window.getSelection();
    if (!sel || sel.isCollapsed || !sel.rangeCount) return;
    var r = sel.getRangeAt(0);
    if (!pane.contains(r.startContainer) || !pane.contains(r.endContainer)) return;
    var start = offset(r.startContainer, r.startOffset), end = offset(r.endContainer, r.endOffset);
    if (end <= start || !r.toString().trim()) return;
    var a = sentenceAt(r.startContainer), b = sentenceAt(r.endContainer);
    choose({kind: 'span', start: start, end: end, text: r.toString(), sentence: a && a === b ? a : null});
  }
  pane.addEventListener('mouseup', function () { setTimeout(checkSpan, 0); });
  pane.addEventListener('keyup', function (e) { if (e.shiftKey) checkSpan(); });

  document.addEventListener('click', function (e) {
    var t = e.target;
    if (!t.closest || t.closest('#editor') || t.closest('header')) return;
    var sel = window.getSelection();
    if (sel && !sel.isCollapsed && pane.contains(sel.anchorNode)) return; // a selection of words: see checkSpan
    var hit = (pane.contains(t) && t.closest('mark.trigger')) || t.closest('[data-event-id],[data-entity-id]');
    if (hit && hit.hasAttribute('data-event-id')) choose({kind: 'event', id: hit.getAttribute('data-event-id')});
    else if (hit && hit.hasAttribute('data-entity-id')) choose({kind: 'entity', id: hit.getAttribute('data-entity-id')});
    else if (pane.contains(t) && t.closest('.sent')) choose({kind: 'sentence', id: t.closest('.sent').getAttribute('data-sentence-id')});
  });
  editor.addEventListener('click', function (e) {
    var b = e.target.closest('button[data-action]');
    if (b) act(b.getAttribute('data-action'), b);
  });
  editor.addEventListener('change', function (e) { if (e.target.id === 'edit-type') setType(e.target.value); });
  document.getElementById('btn-accept').addEventListener('click', accept);
  document.getElementById('btn-undo').addEventListener('click', undo);
  document.getElementById('btn-next').addEventListener('click', next);

  document.addEventListener('keydown', function (e) {
    var t = e.target;
    if (t && (t.tagName === 'INPUT' || t.tagName === 'SELECT' || t.tagName === 'TEXTAREA' || t.isContentEditable)) return;
    if (e.altKey || e.metaKey) return;
    var k = e.key;
    if (e.ctrlKey) {
      if (k === 'z' || k === 'Z') { e.preventDefault(); undo(); }
      return;
    }
    var kind = selected && selected.kind;
    if (k >= '1' && k <= '9' && kind === 'event') setType(cfg.shortcut_types[Number(k) - 1]);
    else if (k === 'a' || k === 'A') accept();
    else if (k === 'n' || k === 'N') next();
    else if (k === 'z' || k === 'Z') undo();
    else if ((k === 'e' || k === 'E') && kind === 'span') addEvent();
    else if ((k === 'f' || k === 'F') && (kind === 'sentence' || kind === 'span')) flipFact();
    else if ((k === 'Delete' || k === 'Backspace') && kind === 'event') deleteEvent();
    else if (k === 'Escape') clearSelection();
    else return;
    e.preventDefault();
  });
  syncButtons();
})();
