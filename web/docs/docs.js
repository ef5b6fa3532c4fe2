// Renders the API reference from the OpenAPI document served beside this page. A file, not an
// inline script, so the page runs under a Content-Security-Policy without 'unsafe-inline'
// scripts.
'use strict';

Redoc.init('openapi.json', {
  expandResponses: '200,201',
  jsonSampleExpandLevel: 3,
  pathInMiddlePanel: true,
  requiredPropsFirst: true,
  sortPropsAlphabetically: false,
  hideHostname: false,
  theme: { sidebar: { width: '280px' } },
}, document.getElementById('redoc'));
