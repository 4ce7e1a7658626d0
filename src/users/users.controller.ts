import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { PlatformAdminOnly } from '../auth/principal';
import { ApiStandardErrors } from '../common/api-docs';
import { ApiPageResponse } from '../common/paging';
import { AddUserRequest, UserResponse, UserSearchQuery, UserSearchResult } from './dto/user.dto';
import { UsersService } from './users.service';

@ApiTags('Users')
@Controller('api/v1')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Post('user/add')
  @HttpCode(200)
  @PlatformAdminOnly()
  @ApiOperation({ summary: 'Add a user (platform administrators only)' })
  @ApiOkResponse({ type: UserResponse })
  @ApiStandardErrors({ conflict: 'A user with this email, username or oidcId exists', notFound: false })
  async add(@Body() body: AddUserRequest): Promise<UserResponse> {
    return this.users.toResponse(await this.users.add(body));
  }

  @Get('users/search')
  @ApiOperation({ summary: 'Find users by username prefix (at least 3 characters); at most one page' })
  @ApiPageResponse(UserSearchResult, 'A')
  @ApiStandardErrors({ notFound: false })
  search(@Query() query: UserSearchQuery) {
    return this.users.search(query);
  }
}
