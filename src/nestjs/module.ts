import {
  type BeforeApplicationShutdown,
  type DynamicModule,
  Inject,
  Injectable,
  Module,
  type ModuleMetadata,
} from '@nestjs/common';
import type { LockerOptions } from '../config/options.js';
import { InvalidArgumentError } from '../errors.js';
import { Locker } from '../locker.js';

/** The token of the options DistlockModule makes its `Locker` from. */
export const DISTLOCK_OPTIONS = Symbol('distlock options');

/** Options of {@link DistlockModule.forRoot}: a `Locker`'s, and whether it is global. */
export type DistlockModuleOptions = LockerOptions & {
  /** Whether every module may inject the `Locker` without importing DistlockModule. @default true */
  global?: boolean;
};

/** Options of {@link DistlockModule.forRootAsync}: the locker's options from a factory. */
export interface DistlockModuleAsyncOptions extends Pick<ModuleMetadata, 'imports'> {
  useFactory: (...deps: never[]) => LockerOptions | Promise<LockerOptions>;
  /** Providers the factory gets, in order (`ConfigService`, say). */
  inject?: unknown[];
  /** @default true */
  global?: boolean;
}

/**
 * Closes the application's locker when the application shuts down (`app.close()`, or a signal
 * once `app.enableShutdownHooks()` was called): before any module's `onApplicationShutdown`,
 * so that a client you passed and close there is still open for the releases. Its own
 * connections (from URLs) close with it; clients you passed are yours to close.
 */
class DistlockLifecycle implements BeforeApplicationShutdown {
  constructor(private readonly locker: Locker) {}

  async beforeApplicationShutdown(): Promise<void> {
    await this.locker.close();
  }
}
Injectable()(DistlockLifecycle);
Inject(Locker)(DistlockLifecycle, undefined, 0);

/**
 * A `Locker` for a NestJS application: `DistlockModule.forRoot({ nodes })` (or
 * `forRootAsync` with a factory) provides it, injectable by its class anywhere, and closes it
 * with the application.
 *
 * @example
 * ```ts
 * @Module({ imports: [DistlockModule.forRoot({ nodes: [process.env.REDIS_URL!] })] })
 * export class AppModule {}
 *
 * @Injectable()
 * export class Billing {
 *   constructor(private readonly locker: Locker) {}
 * }
 * ```
 */
// biome-ignore lint/complexity/noStaticOnlyClass: Nest's modules are classes, configured statically.
export class DistlockModule {
  static forRoot(options: DistlockModuleOptions): DynamicModule {
    if (typeof options !== 'object' || options === null) {
      throw new InvalidArgumentError('options', 'an object with `nodes`', options);
    }
    const { global = true, ...locker } = options;
    return DistlockModule.#module(global, [], { provide: DISTLOCK_OPTIONS, useValue: locker });
  }

  static forRootAsync(options: DistlockModuleAsyncOptions): DynamicModule {
    if (typeof options?.useFactory !== 'function') {
      throw new InvalidArgumentError('useFactory', 'a function returning the options', options);
    }
    const { global = true, imports = [], useFactory, inject = [] } = options;
    const provider = { provide: DISTLOCK_OPTIONS, useFactory, inject: inject as never[] };
    return DistlockModule.#module(global, imports, provider);
  }

  static #module(
    global: boolean,
    imports: NonNullable<ModuleMetadata['imports']>,
    options: NonNullable<ModuleMetadata['providers']>[number],
  ): DynamicModule {
    return {
      module: DistlockModule,
      global,
      imports,
      providers: [
        options,
        {
          provide: Locker,
          useFactory: (lockerOptions: LockerOptions) => new Locker(lockerOptions),
          inject: [DISTLOCK_OPTIONS],
        },
        DistlockLifecycle,
      ],
      exports: [Locker],
    };
  }
}
Module({})(DistlockModule);
