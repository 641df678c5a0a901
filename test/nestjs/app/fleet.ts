// One instance of a fleet: a NestJS application with an every-second @Cron job that runs on
// one instance per tick (@OncePerTick). test/nestjs/fleet.test.ts compiles it as Nest's CLI
// sets a project up (CommonJS, experimentalDecorators, emitDecoratorMetadata) and as an ESM
// project, and runs three instances. Each run of the job is written to a Redis list.
import 'reflect-metadata';
import { Injectable, Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Cron, ScheduleModule } from '@nestjs/schedule';
import { Locker } from 'distlock';
import { DistlockModule, heldLock, OncePerTick } from 'distlock/nestjs';
import { Redis } from 'ioredis';

const nodes = (process.env.FLEET_NODES ?? '').split(',');
const journal = new Redis(nodes[0] as string);

@Injectable()
class Heartbeat {
  // Injected by its type (emitDecoratorMetadata): the module's Locker.
  constructor(readonly locker: Locker) {}

  // Below the interval, a tick's lock never holds back the next tick (an instance SIGKILLed
  // mid-tick holds its tick 900 ms at most); kept 800 ms, it covers an instance whose timer
  // fires late on a loaded machine.
  @Cron('* * * * * *')
  @OncePerTick('fleet-heartbeat', { lockAtMostFor: 900, lockAtLeastFor: 800 })
  async beat(): Promise<void> {
    const second = Math.floor(Date.now() / 1000);
    await journal.rpush('fleet:runs', `${second} ${process.pid} ${heldLock().remainingMs() > 0}`);
    await new Promise((resolve) => setTimeout(resolve, 400));
    await journal.rpush('fleet:done', `${second} ${process.pid}`);
  }
}

@Module({
  imports: [ScheduleModule.forRoot(), DistlockModule.forRoot({ nodes })],
  providers: [Heartbeat],
})
class FleetModule {}

async function main(): Promise<void> {
  const app = await NestFactory.createApplicationContext(FleetModule, { logger: ['error'] });
  app.enableShutdownHooks();
  const locker = app.get(Locker);
  process.stdout.write(`ready ${process.pid} ${locker === app.get(Heartbeat).locker}\n`);
}

void main();
