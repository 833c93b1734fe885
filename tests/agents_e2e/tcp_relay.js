// tests/agents_e2e/tcp_relay.js — the root side of the host layer: the CLI
// runs on the host as an unprivileged uid and needs an HTTP proxy on a TCP
// port, but corral gateway's listen_tcp serves root's sockets only (any
// local user could otherwise spend the injected credentials). So this relay,
// started by the test as root, does what corral run's bridge does: it
// accepts on 127.0.0.1 and hands each connection to the daemon's Unix socket
// after announcing the identity it vouches for.
//
// usage: node tcp_relay.js SOCKET WORKER/RUN   prints "listening PORT" once ready
'use strict';
const net = require('net');

const [socketPath, identity] = process.argv.slice(2);
if (!socketPath || !identity) {
  console.error('usage: node tcp_relay.js SOCKET WORKER/RUN');
  process.exit(2);
}

const server = net.createServer((client) => {
  client.pause();  // nothing read until the gateway side is ready for it
  const gateway = net.createConnection(socketPath, () => {
    gateway.write(`CORRAL-IDENTITY ${identity}\n`);
    client.pipe(gateway);
    gateway.pipe(client);
    client.resume();
  });
  const end = () => { client.destroy(); gateway.destroy(); };
  client.on('error', end);
  gateway.on('error', end);
  client.on('close', end);
  gateway.on('close', end);
});
server.listen(0, '127.0.0.1', () => {
  console.log(`listening ${server.address().port}`);
});
