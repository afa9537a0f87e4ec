(function () {
  'use strict';
  var data = JSON.parse(document.getElementById('ekg-data').textContent);
  // a page that rewrites its data block (argus annotate serve's, after an edit) says so with this event
  document.addEventListener('argus:data', function () { data = JSON.parse(document.getElementById('ekg-data').textContent); });
  var pane = document.getElementById('text-pane');
  var detail = document.getElementById('detail-body');
  function all(sel, root) { return Array.prototype.slice.call((root || document).querySelectorAll(sel)); }
  function attr(name, value) { return '[' + name + '="' + CSS.escape(value) + '"]'; }
  function clear() {
    all('.active').forEach(function (el) { el.classList.remove('active'); });
    all('.focus').forEach(function (el) { el.classList.remove('focus'); });
  }
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function link(text, kind, id) {
    var b = el('button', 'link', text);
    b.type = 'button';
    b.setAttribute(kind, id);
    return b;
  }
  function scrollToText(target) {
    if (!target) return;
    var top = target.getBoundingClientRect().top - pane.getBoundingClientRect().top + pane.scrollTop;
    pane.scrollTop = Math.max(0, top - pane.clientHeight / 3);
    var r = pane.getBoundingClientRect();
    if (r.bottom < 0 || r.top > window.innerHeight) pane.scrollIntoView({block: 'start'});
  }
  function row(dl, label, content) {
    dl.appendChild(el('dt', null, label));
    var dd = el('dd');
    if (typeof content === 'string') dd.textContent = content || '—';
    else if (!content || (content.length === 0)) dd.textContent = '—';
    else content.forEach(function (c, i) { if (i) dd.appendChild(document.createTextNode('; ')); dd.appendChild(c); });
    dl.appendChild(dd);
  }
  function people(list, withRole) {
    return list.map(function (p) {
      var s = el('span');
      s.appendChild(link(p.name, 'data-entity-id', p.entity));
      s.appendChild(document.createTextNode(' (' + (withRole ? p.role + ', ' : '') + p.legal_role + ')'));
      return s;
    });
  }
  function edges(list, key, dir) {
    return list.map(function (e) {
      var s = el('span');
      if (dir === 'in') { s.appendChild(link(e[key], 'data-event-id', e[key])); s.appendChild(document.createTextNode(' ' + e.relation + ' this')); }
      else { s.appendChild(document.createTextNode('this ' + e.relation + ' ')); s.appendChild(link(e[key], 'data-event-id', e[key])); }
      return s;
    });
  }
  function showEvent(ev) {
    detail.textContent = '';
    detail.parentNode.classList.remove('empty-detail');
    var h = el('h3', null, ev.id + ' · ' + ev.type + ' · ' + ev.verb);
    h.setAttribute('data-detail-event', ev.id);
    detail.appendChild(h);
    if (!ev.grounded) detail.appendChild(el('p', 'badge warn', 'ungrounded: its trigger was not found in its evidence'));
    var dl = el('dl', 'w5');
    row(dl, 'Who', people(ev.who, true));
    var what = ev.type + ' — ' + ev.verb + ' — “' + ev.trigger + '”';
    if (ev.trigger_text !== null && ev.trigger_text !== ev.trigger) what += ' (in the text: “' + ev.trigger_text + '”)';
    if (ev.trigger_match) what += ' [' + ev.trigger_match + ' match]';
    if (ev.frame) what += ' · frame ' + ev.frame;
    row(dl, 'What', what);
    row(dl, 'Whom', people(ev.whom, true));
    row(dl, 'When', ev.time.kind + (ev.time.kind === 'unknown' ? '' : ': ' + ev.time.text) + ' · timeline rank ' + ev.rank);
    row(dl, 'Where', people(ev.where, true));
    row(dl, 'Why (caused by)', edges(ev.causes_in, 'source', 'in'));
    row(dl, 'How (leads to)', edges(ev.causes_out, 'target', 'out'));
    row(dl, 'Before / after', edges(ev.temporal_in, 'source', 'in').concat(edges(ev.temporal_out, 'target', 'out')));
    row(dl, 'Evidence', ev.evidence.map(function (s) {
      var page = data.sentences[s] && data.sentences[s].page;
      return link(page ? s + ' (p. ' + page + ')' : s, 'data-goto-sentence', s);
    }));
    row(dl, 'Sources', ev.sources.join(', ') + ' · confidence ' + ev.confidence);
    detail.appendChild(dl);
  }
  function showEntity(en) {
    detail.textContent = '';
    detail.parentNode.classList.remove('empty-detail');
    var h = el('h3', null, en.id + ' · ' + en.name);
    h.setAttribute('data-detail-entity', en.id);
    detail.appendChild(h);
    var dl = el('dl', 'w5');
    row(dl, 'Kind', en.kind);
    row(dl, 'Role', en.role);
    row(dl, 'Aliases', en.aliases.join(', '));
    row(dl, 'Mentions', String(en.mentions) + (en.grounded ? '' : ' (ungrounded)'));
    row(dl, 'Events', en.events.map(function (x) {
      var s = el('span'); s.appendChild(link(x.event, 'data-event-id', x.event));
      s.appendChild(document.createTextNode(' as ' + x.role)); return s;
    }));
    detail.appendChild(dl);
  }
  function selectEvent(id) {
    var ev = data.events[id];
    if (!ev) return;
    clear();
    ev.evidence.forEach(function (s) { all(attr('data-sentence-id', s), pane).forEach(function (x) { x.classList.add('active'); }); });
    all('mark.trigger' + attr('data-event-id', id), pane).forEach(function (x) { x.classList.add('active'); });
    ev.participants.forEach(function (e) {
      ev.evidence.forEach(function (s) {
        all(attr('data-sentence-id', s) + ' mark.mention' + attr('data-entity-id', e), pane).forEach(function (x) { x.classList.add('active'); });
      });
    });
    all('.event-item' + attr('data-event-id', id) + ',.timeline-item' + attr('data-event-id', id) + ',svg .node' + attr('data-event-id', id))
      .forEach(function (x) { x.classList.add('active'); });
    all('svg .edge' + attr('data-source', id) + ',svg .edge' + attr('data-target', id)).forEach(function (x) { x.classList.add('active'); });
    var item = document.querySelector('.event-item' + attr('data-event-id', id));
    if (item) { var list = document.getElementById('events'); list.scrollTop = item.offsetTop - list.offsetTop - 40; }
    showEvent(ev);
    scrollToText(pane.querySelector('mark.trigger' + attr('data-event-id', id)) ||
                 pane.querySelector(attr('data-sentence-id', ev.evidence[0])));
  }
  function selectEntity(id, span) {
    var en = data.entities[id];
    if (!en) return;
    clear();
    var marks = all('mark.mention' + attr('data-entity-id', id), pane);
    marks.forEach(function (x) { x.classList.add('active'); });
    all('tr' + attr('data-entity-row', id)).forEach(function (x) { x.classList.add('active'); });
    var target = marks[0];
    if (span) {
      var hit = all('mark.mention' + attr('data-entity-id', id) + attr('data-span', span), pane);
      hit.forEach(function (x) { x.classList.add('focus'); });
      target = hit[0] || target;
    }
    showEntity(en);
    scrollToText(target);
  }
  function gotoSentence(id) {
    var s = pane.querySelector(attr('data-sentence-id', id));
    if (s) { s.classList.add('active'); scrollToText(s); }
  }
  function activate(target) {
    // in the text, a trigger wins over a mention on the same characters: the event is what one looks for
    var t = (pane.contains(target) && target.closest('mark.trigger')) ||
            target.closest('[data-goto-sentence],[data-event-id],[data-entity-id]');
    if (!t) return false;
    if (t.hasAttribute('data-goto-sentence')) gotoSentence(t.getAttribute('data-goto-sentence'));
    else if (t.hasAttribute('data-event-id')) selectEvent(t.getAttribute('data-event-id'));
    else selectEntity(t.getAttribute('data-entity-id'), t.classList.contains('mention-chip') ? t.getAttribute('data-span') : null);
    return true;
  }
  document.addEventListener('click', function (e) { if (activate(e.target)) e.preventDefault(); });
  document.addEventListener('keydown', function (e) {
    if ((e.key === 'Enter' || e.key === ' ') && e.target.closest && e.target.closest('[tabindex]')) {
      if (activate(e.target)) e.preventDefault();
    }
  });
})();
