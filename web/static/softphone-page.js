/* global location, URLSearchParams */
// The standalone softphone page: token, server and iceServers come from the fragment (never sent to a server).
import { mountSoftphone } from './softphone.js';

const p = new URLSearchParams(location.hash.slice(1));
if (p.get('token'))
  window.simuPhone = mountSoftphone(document.getElementById('phone'), {
    token: p.get('token'),
    server: p.get('server'),
    iceServers: JSON.parse(p.get('ice') || '[]'),
  });
