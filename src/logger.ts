import { pino, type DestinationStream, type Logger } from 'pino';

/** The process's one logger: JSON lines, shared by the HTTP layer and the store. */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    level,
    // Fastify's request serializer logs no headers; this is a second lock in case one is ever added.
    redact: ['req.headers.authorization'],
  };
  return destination ? pino(options, destination) : pino(options);
}
