/** What POST /ffmpeg/validate answers as its `data`. */
export type ValidateResult =
  | {
      valid: true;
      /** The arguments after `ffmpeg`, as the runner will pass them. */
      args: string[];
      inferredOutputFormat: string;
      /** Bare names the command reads that the inputs do not give; a job must supply each. */
      requiredInputs?: string[];
    }
  | {
      valid: false;
      /** Names the refused flag, filter, format or path. */
      error: string;
    };

/** One entry of a job's `inputs`, as POST /jobs takes it. */
export type JobInput = string | { url: string } | { content: string };

/** The validator's own view of the job around the command (validator.Options). */
export interface ValidatorOptions {
  /** Staged inputs in the validator's form; a job's `inputs` are simpler to give as `inputs`. */
  inputs?: Record<string, { url?: string; contentSize?: number; inline?: boolean }>;
  /** params.outputFormat; inferred from the output name when absent. */
  outputFormat?: string;
  /** params.compute. */
  compute?: 'auto' | 'cpu' | 'gpu';
  /** params.timeout in seconds. */
  timeout?: number;
  /** `{base_url}/assets/`: an uploaded asset's content URL under it is accepted as an input. */
  assetUrlPrefix?: string;
}

export interface ValidateRequest {
  /** The job's `inputs`, by staged name. */
  inputs?: Record<string, JobInput>;
  options?: ValidatorOptions;
}

/** What a host can hand over for the module. */
export type ModuleSource =
  | WebAssembly.Module
  | ArrayBuffer
  | ArrayBufferView
  | Response
  | URL
  | string
  | PromiseLike<WebAssembly.Module | ArrayBuffer | ArrayBufferView | Response | URL | string>;

export interface ValidatorConfig {
  /** Hears each line the module writes on stdout (1) or stderr (2). */
  onOutput?: (fd: number, line: string) => void;
  /** Fills bytes with randomness; crypto.getRandomValues by default. */
  random?: (bytes: Uint8Array) => void;
}

/** The validator.wasm of this package. */
export declare const defaultModuleURL: URL;

/** A call the module refused or could not answer: a host or validator bug, not an invalid command. */
export declare class ValidatorError extends Error {}

/** Compiles a source (by default this package's validator.wasm). */
export declare function compileValidator(source?: ModuleSource): Promise<WebAssembly.Module>;

/** Compiles a source (by default this package's validator.wasm) and starts an instance. */
export declare function createValidator(source?: ModuleSource, config?: ValidatorConfig): Promise<Validator>;

export declare class Validator {
  constructor(module: WebAssembly.Module, config?: ValidatorConfig);
  /** Starts the instance, or waits for the restart after a trap. */
  ready(): Promise<void>;
  validate(command: string, request?: ValidateRequest): Promise<ValidateResult>;
  /** The answer as JSON text, byte for byte what the endpoint sends as `data`. */
  validateJSON(command: string, request?: ValidateRequest): Promise<string>;
  /** validate without waiting; throws ValidatorError if the instance is not running. */
  validateSync(command: string, request?: ValidateRequest): ValidateResult;
  validateJSONSync(command: string, request?: ValidateRequest): string;
}

export declare class WASIExit extends Error {
  readonly code: number;
}

/** The WASI preview 1 shim validator.wasm runs on. */
export declare class WASI {
  constructor(config?: { onOutput?: (fd: number, line: string) => void; random?: (bytes: Uint8Array) => void });
  imports(module: WebAssembly.Module): WebAssembly.Imports;
  initialize(instance: WebAssembly.Instance): void;
}
