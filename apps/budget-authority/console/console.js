// Tally console (issue 12, ADR 0034): a read-only view of the ledger over the authority's
// own API, signed in with an operator key or an OIDC bearer token. Plain DOM, no build
// step; every value is written as text (never as HTML), and the only write is a revoke the
// person confirms. Receipts are verified here, with WebCrypto, against the published keys.
'use strict';

(() => {
  const CREDENTIAL = 'tally-console-credential';
  /** Most capabilities one tree shows (five pages of the API's largest page). */
  const TREE_PAGES_MAX = 5;
  const PAGE_LIMIT = 1000;
  /** Capabilities with a reset whose current and previous period are read for the tree. */
  const PERIOD_READS_MAX = 100;
  const RECEIPTS_PAGE = 50;

  const $ = (id) => document.getElementById(id);
  const state = { me: null, receiptsAfter: [null], chart: null, flash: '' };

  // ---- DOM ---------------------------------------------------------------------------
  /** Builds an element: attributes (on* are listeners), then children (strings become text). */
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs ?? {})) {
      if (value === undefined || value === null || value === false) continue;
      if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
      else if (key === 'class') el.className = value;
      else el.setAttribute(key, value === true ? '' : String(value));
    }
    for (const child of children.flat(Infinity)) {
      if (child === undefined || child === null || child === false) continue;
      el.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return el;
  }

  const empty = (text) => h('p', { class: 'empty' }, text);
  const id = (text) => h('span', { class: 'id' }, text ?? '—');
  const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');
  const units = (value) => (value === undefined || value === null ? '—' : Number(value).toLocaleString('en-US'));

  function table(caption, headers, rows) {
    return h(
      'table',
      {},
      h('caption', { class: 'visually-hidden' }, caption),
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headers.map((x) => h('th', { scope: 'col' }, x)),
        ),
      ),
      h(
        'tbody',
        {},
        rows.map((cells) =>
          h(
            'tr',
            {},
            cells.map((c) => (c instanceof Node && c.tagName === 'TD' ? c : h('td', {}, c))),
          ),
        ),
      ),
    );
  }

  /** A usage bar: role meter with its figures in words, and the same words visible beside it. */
  function bar(label, used, limit, unit) {
    const value = Number(used ?? 0);
    const max = limit === undefined || limit === null ? undefined : Number(limit);
    const share = max && max > 0 ? value / max : 0;
    const text =
      max === undefined
        ? `${units(value)} ${unit} (no limit)`
        : `${units(value)} of ${units(max)} ${unit} (${Math.round(share * 1000) / 10}%)`;
    const fill = h('span', {});
    fill.style.width = `${Math.min(100, share * 100)}%`;
    const meter = h(
      'div',
      {
        class: `bar${share >= 1 ? ' full' : share >= 0.8 ? ' high' : ''}`,
        role: 'meter',
        'aria-label': label,
        'aria-valuemin': 0,
        'aria-valuemax': max ?? value,
        'aria-valuenow': value,
        'aria-valuetext': text,
        'data-share': share.toFixed(4),
      },
      fill,
    );
    return h('div', { class: 'usage' }, h('span', {}, label), meter, h('span', { class: 'bar-text' }, text));
  }

  // ---- API ---------------------------------------------------------------------------
  class ApiError extends Error {
    constructor(status, body) {
      super((body && (body.title || body.detail)) || `HTTP ${status}`);
      this.status = status;
      this.body = body;
    }
  }

  async function api(path, init = {}) {
    const credential = sessionStorage.getItem(CREDENTIAL);
    const res = await fetch(path, {
      ...init,
      headers: {
        accept: 'application/json',
        ...(init.body ? { 'content-type': 'application/json' } : {}),
        ...(credential ? { authorization: `Bearer ${credential}` } : {}),
      },
      credentials: 'omit',
      cache: 'no-store',
    });
    const text = await res.text();
    let body = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = null;
    }
    if (res.status === 401 && path !== '/v1/me') {
      signOut('Your credential is no longer accepted. Sign in again.');
      throw new ApiError(res.status, body);
    }
    if (!res.ok) throw new ApiError(res.status, body);
    return body;
  }

  /** Whether a route exists on this authority: Nest answers an unknown route with its own 404. */
  async function probe(path) {
    try {
      return { ok: true, body: await api(path) };
    } catch (error) {
      if (error instanceof ApiError && (error.status === 404 || error.status === 405)) return { ok: false, error };
      throw error;
    }
  }

  // ---- sign in -----------------------------------------------------------------------
  async function signIn(credential) {
    sessionStorage.setItem(CREDENTIAL, credential);
    try {
      state.me = await api('/v1/me');
    } catch (error) {
      sessionStorage.removeItem(CREDENTIAL);
      throw error;
    }
  }

  function signOut(message) {
    sessionStorage.removeItem(CREDENTIAL);
    state.me = null;
    showSignIn(message ?? '');
  }

  function showSignIn(message) {
    $('nav').hidden = true;
    $('who').hidden = true;
    $('page').hidden = true;
    $('sign-in').hidden = false;
    $('sign-in-error').textContent = message;
    $('credential').value = '';
    $('credential').focus();
  }

  function whoText(me) {
    if (me.kind === 'operator') return `Signed in: ${me.role} of tenant ${me.tenant_id} (${me.via})`;
    if (me.kind === 'capability') return `Signed in: capability ${me.capability_id}`;
    return 'Signed in';
  }

  const mayRevoke = () => state.me?.kind === 'operator' && (state.me.role === 'issuer' || state.me.role === 'admin');

  // ---- pages -------------------------------------------------------------------------
  const PAGES = {
    tree: { title: 'Tenants and capabilities', render: treePage },
    holds: { title: 'Holds open now', render: holdsPage },
    spend: { title: 'Spend over time', render: spendPage },
    receipts: { title: 'Receipts', render: receiptsPage },
    work: { title: 'Work timeline', render: workPage },
    ambiguities: { title: 'Ambiguities waiting for the reconciler', render: ambiguitiesPage },
    webhooks: { title: 'Webhook deliveries', render: webhooksPage },
  };

  async function route() {
    if (!state.me) return;
    const [name, arg] = location.hash.replace(/^#/, '').split('?')[0].split('/');
    const page = PAGES[name] ? name : 'tree';
    for (const link of document.querySelectorAll('#nav a'))
      link.toggleAttribute('aria-current', link.getAttribute('href') === `#${page}`);
    for (const link of document.querySelectorAll('#nav a[aria-current]')) link.setAttribute('aria-current', 'page');
    document.title = `${PAGES[page].title} · Tally console`;
    const section = $('page');
    section.hidden = false;
    section.setAttribute('aria-busy', 'true');
    state.chart?.destroy();
    state.chart = null;
    const heading = h('h1', { id: 'page-title', tabindex: '-1' }, PAGES[page].title);
    section.replaceChildren(heading, h('p', { class: 'muted' }, 'Loading…'));
    let content;
    try {
      content = await PAGES[page].render(arg ? decodeURIComponent(arg) : undefined);
    } catch (error) {
      content = h('p', { class: 'error', role: 'alert' }, `Could not load this page: ${error.message}`);
    }
    const flash = state.flash ? h('p', { class: 'badge ok', role: 'status' }, state.flash) : null;
    state.flash = '';
    section.replaceChildren(heading, flash ?? '', content);
    section.setAttribute('aria-busy', 'false');
    section.dataset.page = page;
    section.dataset.ready = 'true';
  }

  // Tenants and capabilities -----------------------------------------------------------
  async function tenantsOf(me) {
    if (me.kind === 'operator' && me.role === 'admin') return (await api('/v1/tenants')).tenants;
    if (me.kind === 'operator') return [await api(`/v1/tenants/${encodeURIComponent(me.tenant_id)}`)];
    return [{ id: me.tenant_id, display_name: me.tenant_id }];
  }

  async function allCapabilities() {
    const out = [];
    let after = null;
    for (let i = 0; i < TREE_PAGES_MAX; i++) {
      const page = await api(`/v1/capabilities?limit=${PAGE_LIMIT}${after === null ? '' : `&after=${after}`}`);
      out.push(...page.capabilities);
      after = page.next_after;
      if (after === null) return { capabilities: out, cut: false };
    }
    return { capabilities: out, cut: true };
  }

  async function periodsOf(capabilities) {
    const periods = new Map();
    const withReset = capabilities
      .filter((c) => !c.revoked && c.grants.some((g) => g.reset))
      .slice(0, PERIOD_READS_MAX);
    await Promise.all(
      withReset.map(async (c) => {
        const path = `/v1/capabilities/${encodeURIComponent(c.id)}/usage`;
        const [current, previous] = await Promise.all([api(path), api(`${path}?period=previous`)]);
        periods.set(c.id, { current: current.grants, previous: previous.grants });
      }),
    );
    return periods;
  }

  async function treePage() {
    const [tenants, { capabilities, cut }] = await Promise.all([tenantsOf(state.me), allCapabilities()]);
    const periods = await periodsOf(capabilities);
    const byParent = new Map();
    const known = new Set(capabilities.map((c) => c.id));
    for (const c of capabilities) {
      const parent = c.parent_id && known.has(c.parent_id) ? c.parent_id : `tenant:${c.tenant_id}`;
      if (!byParent.has(parent)) byParent.set(parent, []);
      byParent.get(parent).push(c);
    }
    const children = (key, depth) => {
      const list = byParent.get(key) ?? [];
      return list.length === 0
        ? null
        : h(
            'ul',
            {},
            list.map((c) => h('li', {}, capabilityNode(c, periods, depth, children))),
          );
    };
    const tree = h(
      'ul',
      { class: 'tree', 'aria-label': 'Tenants and their capabilities' },
      tenants.map((t) =>
        h(
          'li',
          {},
          h(
            'section',
            { class: 'node tenant', 'aria-labelledby': `tenant-${t.id}` },
            h(
              'h2',
              { id: `tenant-${t.id}` },
              `Tenant ${t.display_name ?? t.id}`,
              ' ',
              h('span', { class: 'muted id' }, `(${t.id})`),
            ),
            (byParent.get(`tenant:${t.id}`) ?? []).length === 0
              ? h('p', { class: 'muted' }, 'No capabilities in this tenant.')
              : children(`tenant:${t.id}`, 3),
          ),
        ),
      ),
    );
    return h(
      'div',
      {},
      h(
        'p',
        {},
        `${capabilities.length} capabilit${capabilities.length === 1 ? 'y' : 'ies'} in ${tenants.length} tenant${tenants.length === 1 ? '' : 's'}.`,
      ),
      cut ? h('p', { class: 'badge warn' }, `Only the first ${capabilities.length} capabilities are shown.`) : null,
      tree,
    );
  }

  function statusBadge(c) {
    if (c.revoked) return h('span', { class: 'badge bad' }, `revoked ${when(c.revoked_at)}`);
    if (Date.parse(c.expires_at) <= Date.now()) return h('span', { class: 'badge warn' }, 'expired');
    return h('span', { class: 'badge ok' }, 'active');
  }

  function grantBars(grant, figures, prefix) {
    const currency = grant.currency ?? figures?.currency ?? 'units';
    return [
      bar(`${prefix}cost`, figures?.committed_cost_units ?? 0, grant.max_total_cost_units, currency),
      grant.max_invocations !== undefined
        ? bar(`${prefix}invocations`, figures?.invocation_count ?? 0, grant.max_invocations, 'invocations')
        : null,
      h(
        'p',
        { class: 'muted' },
        `Held now ${units(figures?.exposed_cost_units ?? 0)}, realized ${units(figures?.realized_cost_units ?? 0)} ${currency}.`,
      ),
    ];
  }

  function capabilityNode(c, periods, depth, children) {
    const headingTag = `h${Math.min(6, depth)}`;
    const titleId = `cap-${c.id}`;
    const grants = c.grants.map((g, i) => {
      const total = c.usage.find((u) => u.grant_index === i);
      const period = periods.get(c.id);
      const current = period?.current.find((u) => u.grant_index === i && u.period_start);
      const previous = period?.previous.find((u) => u.grant_index === i && u.period_start);
      const name = `${g.server_id} / ${g.tool_name}`;
      return h(
        'li',
        { class: 'grant' },
        h(
          'p',
          {},
          h('strong', {}, `Grant ${i}: ${name}`),
          g.reset ? ` · resets every ${g.reset.every ?? `${g.reset.period_seconds} s`}` : '',
        ),
        current
          ? [
              h('p', {}, `Current period ${when(current.period_start)} – ${when(current.period_end)}`),
              grantBars(g, current, `Grant ${i} current period `),
              previous
                ? [
                    h('p', {}, `Previous period ${when(previous.period_start)} – ${when(previous.period_end)}`),
                    grantBars(g, previous, `Grant ${i} previous period `),
                  ]
                : null,
            ]
          : grantBars(g, total, `Grant ${i} `),
      );
    });
    const revoke =
      mayRevoke() && !c.revoked
        ? h('button', { type: 'button', class: 'danger', onclick: () => confirmRevoke(c) }, `Revoke ${c.id}`)
        : null;
    return [
      h(
        'article',
        { class: 'node capability', 'aria-labelledby': titleId, 'data-capability': c.id },
        h(headingTag, { id: titleId }, 'Capability ', id(c.id), ' ', statusBadge(c)),
        h(
          'p',
          { class: 'muted' },
          `Issued ${when(c.issued_at)}, expires ${when(c.expires_at)}${c.parent_id ? `, delegated from ${c.parent_id}` : ''}.`,
        ),
        h('ul', { class: 'grants', 'aria-label': `Grants of ${c.id}` }, grants),
        revoke,
      ),
      children(c.id, depth + 1),
    ];
  }

  /** The one change the console makes: a revoke, only after the person confirms it in a dialog. */
  function confirmRevoke(c) {
    const dialog = $('confirm');
    const opener = document.activeElement;
    $('confirm-text').textContent =
      `Revoking ${c.id} stops it and every capability delegated from it at once. This cannot be undone.`;
    dialog.returnValue = '';
    dialog.addEventListener(
      'close',
      async () => {
        if (dialog.returnValue !== 'revoke') {
          opener?.focus();
          return;
        }
        try {
          await api(`/v1/capabilities/${encodeURIComponent(c.id)}/revoke`, { method: 'POST', body: '{}' });
          state.flash = `Capability ${c.id} revoked.`;
        } catch (error) {
          state.flash = `Revoking ${c.id} failed: ${error.message}`;
        }
        await route();
        $('page-title')?.focus();
      },
      { once: true },
    );
    dialog.showModal();
  }

  // Holds --------------------------------------------------------------------------------
  async function holdsPage() {
    const { holds } = await api(`/v1/holds?limit=${PAGE_LIMIT}`);
    if (holds.length === 0) return empty('No holds are open now.');
    return h(
      'div',
      {},
      h('p', {}, `${holds.length} hold${holds.length === 1 ? '' : 's'} open, the ones that expire first first.`),
      table(
        'Open holds',
        ['Hold', 'Capability', 'Grant', 'Status', 'Exposure', 'Expires'],
        holds.map((x) => [
          id(x.hold_id),
          id(x.capability_id),
          String(x.grant_index),
          x.status + (x.preflight ? ' (preflight)' : ''),
          h('td', { class: 'num' }, units(x.exposure_units)),
          when(x.expires_at),
        ]),
      ),
    );
  }

  // Spend --------------------------------------------------------------------------------
  async function spendPage() {
    const bucket = new URLSearchParams(location.hash.split('?')[1] ?? '').get('bucket') ?? 'minute';
    const spend = await api(`/v1/spend?bucket=${encodeURIComponent(bucket)}`);
    const select = h(
      'select',
      {
        id: 'bucket',
        onchange: (e) => {
          location.hash = `#spend?bucket=${e.target.value}`;
        },
      },
      ['minute', 'hour', 'day'].map((b) => h('option', { value: b, selected: b === bucket }, `per ${b}`)),
    );
    const controls = h('div', {}, h('label', { for: 'bucket' }, 'Interval'), select);
    if (spend.series.length === 0)
      return h('div', {}, controls, empty(`Nothing was spent since ${when(spend.since)}.`));
    const currencies = [...new Set(spend.series.map((s) => s.currency || 'units'))];
    const starts = [...new Set(spend.series.map((s) => s.start))].sort();
    const canvas = h('canvas', {
      id: 'spend-chart',
      role: 'img',
      'aria-label': `Realized spend per ${bucket} since ${when(spend.since)}, by currency; the same figures are in the table below.`,
    });
    const figures = table(
      'Spend per interval',
      ['Interval start', 'Currency', 'Realized', 'Ledger entries'],
      spend.series.map((s) => [
        when(s.start),
        s.currency || '—',
        h('td', { class: 'num' }, units(s.realized_units)),
        String(s.entries),
      ]),
    );
    const out = h(
      'div',
      {},
      controls,
      h('div', { class: 'chart-box' }, canvas),
      spend.truncated
        ? h('p', { class: 'badge warn' }, 'The window holds more entries than one chart sums; the oldest are left out.')
        : null,
      h('h2', {}, 'Figures'),
      figures,
    );
    queueMicrotask(() => drawSpend(canvas, starts, currencies, spend.series, bucket));
    return out;
  }

  const PALETTE = ['#1f4e79', '#a4001d', '#1e6b30', '#8a4b00', '#5b2a86'];

  function drawSpend(canvas, starts, currencies, series, bucket) {
    if (typeof window.Chart !== 'function') {
      canvas.replaceWith(h('p', { class: 'error' }, 'The chart library did not load; the figures are in the table.'));
      return;
    }
    const datasets = currencies.map((currency, i) => ({
      label: currency,
      data: starts.map((start) => {
        const point = series.find((s) => s.start === start && (s.currency || 'units') === currency);
        return point ? Number(point.realized_units) : 0;
      }),
      backgroundColor: PALETTE[i % PALETTE.length],
      borderColor: PALETTE[i % PALETTE.length],
    }));
    state.chart = new window.Chart(canvas, {
      type: 'bar',
      data: { labels: starts.map((s) => new Date(s).toLocaleString()), datasets },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: { title: { display: true, text: `Realized spend per ${bucket}` } },
        scales: { y: { beginAtZero: true, title: { display: true, text: 'units' } } },
      },
    });
    canvas.dataset.drawn = 'true';
  }

  // Receipts -----------------------------------------------------------------------------
  const b64url = (text) => Uint8Array.from(atob(text.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0));
  const toB64url = (bytes) =>
    btoa(String.fromCharCode(...new Uint8Array(bytes)))
      .replace(/\+/g, '-')
      .replace(/\//g, '_')
      .replace(/=+$/, '');

  /** The canonical JSON receipts are signed over: keys sorted, no whitespace, undefined left out. */
  function canonical(value) {
    if (value === null) return 'null';
    if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonical(v))).join(',')}]`;
    if (typeof value === 'object') {
      const keys = Object.keys(value)
        .filter((k) => value[k] !== undefined)
        .sort();
      return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
    }
    return JSON.stringify(value);
  }

  async function publishedKeys() {
    const jwks = await api('/.well-known/jwks.json');
    const keys = new Map();
    for (const jwk of jwks.keys) {
      try {
        keys.set(
          jwk.kid,
          await crypto.subtle.importKey('jwk', { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: 'Ed25519' }, false, [
            'verify',
          ]),
        );
      } catch {
        keys.set(jwk.kid, null);
      }
    }
    return keys;
  }

  async function signatureStatus(receipt, keys) {
    const { signature, ...body } = receipt;
    if (typeof signature !== 'string' || typeof body.key_id !== 'string') return { ok: false, text: 'Unsigned' };
    const key = keys.get(body.key_id);
    if (key === undefined) return { ok: false, text: `Unknown key ${body.key_id}` };
    if (key === null) return { ok: false, text: 'Key not usable in this browser' };
    try {
      const ok = await crypto.subtle.verify(
        { name: 'Ed25519' },
        key,
        b64url(signature),
        new TextEncoder().encode(canonical(body)),
      );
      return ok ? { ok: true, text: 'Valid signature' } : { ok: false, text: 'Invalid signature' };
    } catch {
      return { ok: false, text: 'Invalid signature' };
    }
  }

  const sha256 = async (value) =>
    toB64url(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(canonical(value))));

  async function receiptsPage() {
    if (!window.crypto?.subtle)
      return empty('This browser cannot verify signatures here (WebCrypto needs https or localhost).');
    const index = Number(new URLSearchParams(location.hash.split('?')[1] ?? '').get('page') ?? 0);
    const after = state.receiptsAfter[index] ?? null;
    const [page, keys] = await Promise.all([
      api(`/v1/receipts?limit=${RECEIPTS_PAGE}${after ? `&after=${encodeURIComponent(after)}` : ''}`),
      publishedKeys(),
    ]);
    if (index === 0) state.receiptsAfter = [null];
    state.receiptsAfter[index + 1] = page.next_after;
    if (page.receipts.length === 0) return empty('No receipts yet.');
    const last = new Map();
    const rows = [];
    let bad = 0;
    for (const r of page.receipts) {
      const signed = await signatureStatus(r, keys);
      const chainKey = r.capability_id ?? 'tree';
      const before = last.get(chainKey);
      let chain = 'unchained';
      if (typeof r.chain_index === 'number') {
        if (before === undefined) chain = r.chain_index === 0 ? 'first of its chain' : `#${r.chain_index}`;
        else if (r.chain_index !== before.index + 1) chain = `gap after #${before.index}`;
        else
          chain =
            r.prev_hash === before.hash
              ? `#${r.chain_index}, links to #${before.index}`
              : `#${r.chain_index}, broken link`;
        last.set(chainKey, { index: r.chain_index, hash: await sha256(r) });
      }
      if (!signed.ok) bad++;
      rows.push([
        id(r.id),
        id(r.capability_id),
        r.decision?.verdict ?? r.kind ?? r.type ?? '—',
        when(r.issued_at ?? r.at ?? r.timestamp),
        chain,
        h(
          'td',
          { 'data-signature': signed.ok ? 'valid' : 'invalid' },
          h('span', { class: `badge ${signed.ok ? 'ok' : 'bad'}` }, signed.ok ? '✓ ' : '✗ ', signed.text),
        ),
      ]);
    }
    const nav = h(
      'nav',
      { 'aria-label': 'Receipt pages' },
      index > 0 ? h('a', { href: `#receipts?page=${index - 1}` }, 'Previous page') : null,
      ' ',
      page.next_after ? h('a', { href: `#receipts?page=${index + 1}` }, 'Next page') : null,
    );
    return h(
      'div',
      {},
      h(
        'p',
        { role: 'status' },
        `${page.receipts.length} receipt${page.receipts.length === 1 ? '' : 's'} on this page${page.total !== undefined ? ` of ${page.total}` : ''}, oldest first; `,
        bad === 0
          ? 'every signature verifies with the published keys.'
          : `${bad} signature${bad === 1 ? ' does' : 's do'} not verify.`,
      ),
      table(
        'Receipts and their signatures',
        ['Receipt', 'Capability', 'Decision', 'Recorded', 'Chain', 'Signature'],
        rows,
      ),
      nav,
    );
  }

  // Work timeline ------------------------------------------------------------------------
  async function workPage(workId) {
    const form = h(
      'form',
      {
        onsubmit: (e) => {
          e.preventDefault();
          const value = new FormData(e.target).get('work_id').trim();
          if (value) location.hash = `#work/${encodeURIComponent(value)}`;
        },
      },
      h('label', { for: 'work-id' }, 'Work id'),
      h('input', { id: 'work-id', name: 'work_id', value: workId ?? '', required: true, autocomplete: 'off' }),
      ' ',
      h('button', { type: 'submit' }, 'Show timeline'),
    );
    if (!workId) return h('div', {}, form, empty('Enter a work unit id to see its timeline and attempts.'));
    let timeline;
    try {
      timeline = await api(`/v1/console/work/${encodeURIComponent(workId)}`);
    } catch (error) {
      if (error instanceof ApiError && error.status === 404)
        return h('div', {}, form, h('p', { class: 'error', role: 'alert' }, error.message));
      throw error;
    }
    return h('div', {}, form, workTimeline(timeline));
  }

  function workTimeline({ work, receipt, session_log: log }) {
    const submitted = log.find((e) => e.kind === 'prompt' || e.kind === 'header');
    const attempts = receipt?.attempts ?? [];
    const items = [
      h(
        'li',
        {},
        h('h3', {}, 'Submitted'),
        h('p', {}, 'Session ', id(work.session_id), receipt ? ` · purpose ${receipt.purpose}` : ''),
        submitted?.at ? h('p', { class: 'muted' }, when(submitted.at)) : null,
      ),
      ...attempts.map((a) =>
        h(
          'li',
          { 'data-attempt': a.ordinal },
          h('h3', {}, `Attempt ${a.ordinal + 1}: ${a.provider} / ${a.model}`),
          h(
            'dl',
            {},
            h('dt', {}, 'Why'),
            h('dd', {}, a.reason),
            h('dt', {}, 'Outcome'),
            h('dd', {}, `${a.settlement}${a.domain ? ` (${a.domain})` : ''}`),
            h('dt', {}, 'Latency'),
            h('dd', {}, `${units(a.latency_ms)} ms`),
            a.usage
              ? [
                  h('dt', {}, 'Usage'),
                  h(
                    'dd',
                    {},
                    `${a.usage.input_tokens} in, ${a.usage.output_tokens} out${a.usage.cost_units !== undefined ? `, cost ${units(a.usage.cost_units)}` : ''}`,
                  ),
                ]
              : null,
            a.hold_id ? [h('dt', {}, 'Hold'), h('dd', {}, id(a.hold_id))] : null,
            a.error ? [h('dt', {}, 'Error'), h('dd', {}, a.error)] : null,
          ),
        ),
      ),
      h(
        'li',
        {},
        h('h3', {}, `Now: ${work.status}`),
        work.output !== undefined ? h('p', {}, 'Output: ', h('q', {}, work.output)) : null,
        work.error !== undefined ? h('p', { class: 'error' }, work.error) : null,
        receipt && receipt.winning_attempt !== null && receipt.winning_attempt !== undefined
          ? h('p', {}, `Won by attempt ${receipt.winning_attempt + 1}.`)
          : null,
      ),
    ];
    return h(
      'div',
      {},
      h('h2', {}, 'Work ', id(work.work_id)),
      h(
        'p',
        {},
        `${attempts.length} attempt${attempts.length === 1 ? '' : 's'}${receipt?.metered ? ', metered by this authority' : ''}.`,
      ),
      h('ol', { class: 'timeline', 'aria-label': `Timeline of work ${work.work_id}` }, items),
    );
  }

  // Ambiguities ------------------------------------------------------------------------
  async function ambiguitiesPage() {
    const { ambiguities } = await api(`/v1/ambiguities?status=open&limit=${PAGE_LIMIT}`);
    if (ambiguities.length === 0) return empty('No ambiguities are waiting for the reconciler.');
    return h(
      'div',
      {},
      h(
        'p',
        {},
        `${ambiguities.length} ambiguit${ambiguities.length === 1 ? 'y is' : 'ies are'} waiting for the reconciler, oldest first.`,
      ),
      table(
        'Open ambiguities',
        ['Ambiguity', 'Kind', 'Capability', 'Hold', 'Rail reference', 'Recorded at sequence'],
        ambiguities.map((a) => [
          id(a.ambiguity_id),
          a.kind,
          id(a.capability_id),
          id(a.hold_id),
          id(a.reference),
          String(a.recorded_sequence),
        ]),
      ),
    );
  }

  // Webhooks ---------------------------------------------------------------------------
  /** Webhooks may not exist on this authority yet: each read is probed, and a missing one says so. */
  async function webhooksPage() {
    const tenants = state.me.kind === 'operator' ? await tenantsOf(state.me) : [];
    if (tenants.length === 0) return empty('Webhooks belong to tenants; sign in with an operator key to see them.');
    const sections = [];
    for (const t of tenants) {
      const base = `/v1/tenants/${encodeURIComponent(t.id)}/webhooks`;
      const listed = await probe(base);
      if (!listed.ok) return empty('This authority does not offer webhooks yet, so there are no deliveries to show.');
      const hooks = listed.body?.webhooks ?? [];
      const rows = [];
      for (const hook of hooks) {
        const deliveries = await probe(`${base}/${encodeURIComponent(hook.id)}/deliveries`);
        const list = deliveries.ok ? (deliveries.body?.deliveries ?? []) : [];
        if (!deliveries.ok) rows.push([id(hook.id), hook.url, '—', 'This authority does not list deliveries', '—']);
        for (const d of list)
          rows.push([
            id(hook.id),
            hook.url,
            d.type ?? d.event ?? '—',
            d.status ?? (d.delivered ? 'delivered' : 'pending'),
            when(d.delivered_at ?? d.last_attempt_at ?? d.created_at),
          ]);
      }
      sections.push(
        h(
          'section',
          { 'aria-labelledby': `wh-${t.id}` },
          h('h2', { id: `wh-${t.id}` }, `Tenant ${t.display_name ?? t.id}`),
          hooks.length === 0
            ? empty('No webhooks are registered for this tenant.')
            : rows.length === 0
              ? empty('No deliveries yet.')
              : table(`Webhook deliveries of ${t.id}`, ['Webhook', 'URL', 'Event', 'Status', 'When'], rows),
        ),
      );
    }
    return h('div', {}, sections);
  }

  // ---- boot ----------------------------------------------------------------------------
  async function afterSignIn() {
    $('sign-in').hidden = true;
    $('nav').hidden = false;
    $('who').hidden = false;
    $('who-text').textContent = whoText(state.me);
    await route();
    $('page-title')?.focus();
  }

  async function boot() {
    $('sign-in-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      const credential = $('credential').value.trim();
      if (!credential) {
        $('sign-in-error').textContent = 'Enter an operator key or a token.';
        return;
      }
      try {
        await signIn(credential);
        await afterSignIn();
      } catch (error) {
        $('sign-in-error').textContent =
          error instanceof ApiError && (error.status === 401 || error.status === 403)
            ? 'That credential was not accepted.'
            : `Could not sign in: ${error.message}`;
      }
    });
    $('sign-out').addEventListener('click', () => signOut('Signed out.'));
    window.addEventListener('hashchange', async () => {
      await route();
      $('page-title')?.focus();
    });
    if (sessionStorage.getItem(CREDENTIAL)) {
      try {
        state.me = await api('/v1/me');
        await afterSignIn();
        return;
      } catch {
        sessionStorage.removeItem(CREDENTIAL);
      }
    }
    showSignIn('');
  }

  document.addEventListener('DOMContentLoaded', boot);
})();
