// The phrase-table language of a page language (F40): `<html lang>` as written ("pt-BR", "zh_Hant",
// "IW"), through the table's aliases, to a language the table has ("pt", "zh-Hant", "he"), or null.
// One function, used where the classifier decides (policy.js) and where the guard runtime picks the
// table a document gets (guard.py's install code), so both always agree.
(table, lang) => {
  const code = String(lang || '').trim().toLowerCase().replace('_', '-');
  if (!code) return null;
  const aliases = table.aliases || {};
  const base = code.split('-')[0];
  const has = (x) => !!x && Object.prototype.hasOwnProperty.call(table.languages, x);
  return [aliases[code], code, aliases[base], base].find(has) || null;
}
