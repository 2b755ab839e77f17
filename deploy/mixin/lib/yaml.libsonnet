// A small YAML writer for Prometheus rule files: keys in the order a reader expects (record/alert, expr,
// for, labels, annotations), multi-line strings as literal blocks, plain scalars where YAML reads them back
// as the same string, every other string double-quoted (JSON escaping is valid YAML). std.manifestYamlDoc
// sorts keys alphabetically (`record` after `expr`) and quotes everything. tests/observability/test_mixin.py
// loads the output with PyYAML and compares it with the jsonnet value.
local order = ['name', 'interval', 'limit', 'rules', 'record', 'alert', 'expr', 'for', 'keep_firing_for', 'labels', 'annotations', 'summary', 'description'];

local ordered = { [k]: true for k in order };
local keys(o) =
  [k for k in order if std.objectHas(o, k)]
  + std.sort([k for k in std.objectFields(o) if !std.objectHas(ordered, k)]);

// Character classes as objects: std.objectHas is fast, std.member on a string or array is not (seconds here).
local set(chars) = { [c]: true for c in std.stringChars(chars) };
local letters = set('abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ');
local safe = letters + set("0123456789 _-.,:/()'#");
local digits = set('0123456789');
local reserved = { 'true': true, 'false': true, yes: true, no: true, on: true, off: true, 'null': true, y: true, n: true };
local has(v, sub) = std.strReplace(v, sub, '') != v;
local isDuration(v) =
  std.length(v) >= 2 && std.objectHas(set('smhdwy'), v[std.length(v) - 1])
  && std.all([std.objectHas(digits, ch) for ch in std.stringChars(v[0:std.length(v) - 1])]);
// A string YAML reads back unchanged without quotes: starts with a letter, only "safe" characters, no ': ' or
// ' #' (a mapping or a comment), no trailing ':' or space, not a YAML 1.1 boolean or null; or a duration.
local plain(v) =
  isDuration(v)
  || (std.length(v) > 0 && std.objectHas(letters, v[0])
      && std.all([std.objectHas(safe, ch) for ch in std.stringChars(v)])
      && !has(v, ': ') && !has(v, ' #')
      && !std.endsWith(v, ':') && !std.endsWith(v, ' ')
      && !std.objectHas(reserved, std.asciiLower(v)));

// Long one-line text (descriptions) as a folded block (`>-`), wrapped at `width` columns: YAML joins the
// lines with single spaces, so this is exact for text without newlines, double or edge spaces.
local width = 110;
local foldable(v, indent) =
  std.length(indent) + std.length(v) > width && !has(v, '  ')
  && !std.startsWith(v, ' ') && !std.endsWith(v, ' ');
local opens(t) = std.length(std.split(t, '{{')) > std.length(std.split(t, '}}'));
// Words, keeping a template action ({{ $labels.x }}) in one piece.
local words(v) = std.foldl(
  function(acc, t)
    if std.length(acc) > 0 && opens(acc[std.length(acc) - 1]) then acc[0:std.length(acc) - 1] + [acc[std.length(acc) - 1] + ' ' + t]
    else acc + [t],
  std.split(v, ' '), []);
local fold(v, indent) =
  local wrapped = std.foldl(
    function(acc, w)
      local last = acc[std.length(acc) - 1];
      if last == '' then acc[0:std.length(acc) - 1] + [w]
      else if std.length(indent) + std.length(last) + 1 + std.length(w) > width then acc + [w]
      else acc[0:std.length(acc) - 1] + [last + ' ' + w],
    words(v), ['']);
  '>-\n' + std.join('\n', [indent + l for l in wrapped]);

local scalar(v, indent) =
  if std.isString(v) && !has(v, '\n') && foldable(v, indent) then fold(v, indent)
  else if std.isString(v) && has(v, '\n') then
    (if std.endsWith(v, '\n') then '|' else '|-') + '\n'
    + std.join('\n', [if l == '' then '' else indent + l for l in std.split(std.rstripChars(v, '\n'), '\n')])
  else if std.isString(v) && plain(v) then v
  else if std.isString(v) then std.escapeStringJson(v)
  else std.manifestJson(v);

local nested(v) = (std.isObject(v) || std.isArray(v)) && std.length(v) > 0;

local lines(v, ind) =
  if std.isObject(v) then
    std.flattenArrays([
      if nested(v[k]) then [ind + k + ':'] + lines(v[k], ind + '  ')
      else [ind + k + ': ' + (if std.isObject(v[k]) then '{}' else if std.isArray(v[k]) then '[]' else scalar(v[k], ind + '  '))]
      for k in keys(v)
    ])
  else
    std.flattenArrays([
      local inner = if nested(x) then lines(x, ind + '  ') else [ind + '  ' + scalar(x, ind + '  ')];
      [ind + '- ' + std.substr(inner[0], std.length(ind) + 2, std.length(inner[0]))] + inner[1:]
      for x in v
    ]);

{
  // The document as YAML text, ending with a newline.
  manifest(doc):: std.join('\n', lines(doc, '')) + '\n',
}
